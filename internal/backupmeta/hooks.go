package backupmeta

// Hooks are the optional callbacks of the functions that read many
// metadata files.
type Hooks struct {
	// Unreadable is called for a metadata file that cannot be decoded;
	// that entry is left out, so nothing acts on a guess.
	Unreadable func(name string, err error)
	// Progress is called after each entry read, with the count so far:
	// an activity heartbeats there, a location may hold thousands.
	Progress func(read int)
}

func (h Hooks) unreadable(name string, err error) {
	if h.Unreadable != nil {
		h.Unreadable(name, err)
	}
}

func (h Hooks) progress(read int) {
	if h.Progress != nil {
		h.Progress(read)
	}
}
