package restore

import "github.com/google/uuid"

// uidTypes maps the UIDs of selected objects to their type in about 30
// bytes each, where a map of UID strings to type names took about 200: a
// restore of a million objects holds it through its whole plan. UIDs the
// API server made are UUIDs, kept as their 16 bytes; any other string (a
// backup written elsewhere) is kept as it is.
type uidTypes struct {
	uuids  map[uuid.UUID]uint32
	others map[string]uint32
	// types are the group-resources the values index, ids their index.
	types []string
	ids   map[string]uint32
}

func newUIDTypes() *uidTypes {
	return &uidTypes{uuids: map[uuid.UUID]uint32{}, others: map[string]uint32{}, ids: map[string]uint32{}}
}

// add records uid as an object of type gr, unless it is recorded
// already; it reports whether it was new.
func (u *uidTypes) add(uid, gr string) bool {
	if _, seen := u.get(uid); seen {
		return false
	}
	id, ok := u.ids[gr]
	if !ok {
		id = uint32(len(u.types))
		u.types = append(u.types, gr)
		u.ids[gr] = id
	}
	if parsed, err := uuid.Parse(uid); err == nil && parsed.String() == uid {
		u.uuids[parsed] = id
	} else {
		u.others[uid] = id
	}
	return true
}

// get returns the type of the object with uid.
func (u *uidTypes) get(uid string) (string, bool) {
	if parsed, err := uuid.Parse(uid); err == nil && parsed.String() == uid {
		id, ok := u.uuids[parsed]
		if !ok {
			return "", false
		}
		return u.types[id], true
	}
	id, ok := u.others[uid]
	if !ok {
		return "", false
	}
	return u.types[id], true
}
