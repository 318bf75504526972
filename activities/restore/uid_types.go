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
// already; it reports whether it was new. It parses uid once: the plan
// calls it for every object.
func (u *uidTypes) add(uid, gr string) bool {
	parsed, isUUID := asUUID(uid)
	if isUUID {
		if _, seen := u.uuids[parsed]; seen {
			return false
		}
	} else if _, seen := u.others[uid]; seen {
		return false
	}
	id, ok := u.ids[gr]
	if !ok {
		id = uint32(len(u.types))
		u.types = append(u.types, gr)
		u.ids[gr] = id
	}
	if isUUID {
		u.uuids[parsed] = id
	} else {
		u.others[uid] = id
	}
	return true
}

// get returns the type of the object with uid.
func (u *uidTypes) get(uid string) (string, bool) {
	var id uint32
	var ok bool
	if parsed, isUUID := asUUID(uid); isUUID {
		id, ok = u.uuids[parsed]
	} else {
		id, ok = u.others[uid]
	}
	if !ok {
		return "", false
	}
	return u.types[id], true
}

// asUUID parses uid when it is a UUID in its canonical spelling, the
// only one kept as bytes: any other spelling stays the string it is.
func asUUID(uid string) (uuid.UUID, bool) {
	parsed, err := uuid.Parse(uid)
	return parsed, err == nil && parsed.String() == uid
}
