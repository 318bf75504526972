package ociimage

// NonRoot is the user cairn's image runs as.
const NonRoot = "65532:65532"

// Cairn is cairn's image: the static binary as /cairn (its entrypoint),
// the CA certificates of caCerts ("": none), a non-root user and a
// writable /tmp.
func Cairn(binary, caCerts string) Spec {
	s := Spec{
		Files: []File{
			{Path: "cairn", Src: binary, Mode: 0o755},
			{Path: "etc/passwd", Mode: 0o644, Data: []byte("root:x:0:0:root:/root:/sbin/nologin\n" +
				"nonroot:x:65532:65532:nonroot:/tmp:/sbin/nologin\n")},
			{Path: "etc/group", Mode: 0o644, Data: []byte("root:x:0:\nnonroot:x:65532:\n")},
		},
		Dirs:       map[string]int64{"tmp": 0o1777},
		Entrypoint: []string{"/cairn"},
		Env:        []string{"PATH=/", "HOME=/tmp"},
		User:       NonRoot,
		WorkingDir: "/tmp",
	}
	if caCerts != "" {
		s.Files = append(s.Files, File{Path: "etc/ssl/certs/ca-certificates.crt", Src: caCerts, Mode: 0o644})
	}
	return s
}
