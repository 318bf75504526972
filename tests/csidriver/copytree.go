package main

import (
	"fmt"
	"io"
	"io/fs"
	"os"
	"path/filepath"
	"syscall"
)

// keptModeBits are the mode bits copyTree carries over.
const keptModeBits = fs.ModePerm | fs.ModeSetuid | fs.ModeSetgid | fs.ModeSticky

// copyTree copies the directory src to dst, which must not exist: regular
// files byte for byte, directories, and symlinks as symlinks with the same
// target, each with its mode bits and (but for symlinks) modification time,
// and, when the driver runs as root, its owner, as a real snapshot keeps
// them. Hard links become separate files, and any other kind of file is
// an error.
func copyTree(src, dst string) error {
	info, err := os.Lstat(src)
	if err != nil {
		return err
	}
	if !info.IsDir() {
		return fmt.Errorf("copy %s: not a directory", src)
	}
	return copyEntry(src, dst, info)
}

func copyEntry(src, dst string, info fs.FileInfo) error {
	switch mode := info.Mode(); {
	case mode.IsDir():
		return copyDir(src, dst, info)
	case mode.IsRegular():
		return copyFile(src, dst, info)
	case mode&fs.ModeSymlink != 0:
		target, err := os.Readlink(src)
		if err != nil {
			return err
		}
		if err := os.Symlink(target, dst); err != nil {
			return err
		}
		return keepOwner(dst, info)
	default:
		return fmt.Errorf("copy %s: unsupported file type %v", src, mode.Type())
	}
}

// copyDir creates dst writable, fills it, and only then gives it src's mode
// and time, so read-only directories copy too.
func copyDir(src, dst string, info fs.FileInfo) error {
	if err := os.Mkdir(dst, 0o700); err != nil {
		return err
	}
	entries, err := os.ReadDir(src)
	if err != nil {
		return err
	}
	for _, e := range entries {
		child, err := e.Info()
		if err != nil {
			return err
		}
		if err := copyEntry(filepath.Join(src, e.Name()), filepath.Join(dst, e.Name()), child); err != nil {
			return err
		}
	}
	if err := keepOwner(dst, info); err != nil {
		return err
	}
	if err := os.Chmod(dst, info.Mode()&keptModeBits); err != nil {
		return err
	}
	return os.Chtimes(dst, info.ModTime(), info.ModTime())
}

// keepOwner gives dst the owner of src's info, before its mode (a chown
// clears set-user-ID bits). Only root may; otherwise the copy is the
// driver's user's.
func keepOwner(dst string, info fs.FileInfo) error {
	st, ok := info.Sys().(*syscall.Stat_t)
	if !ok || os.Geteuid() != 0 {
		return nil
	}
	return os.Lchown(dst, int(st.Uid), int(st.Gid))
}

func copyFile(src, dst string, info fs.FileInfo) error {
	in, err := os.Open(src)
	if err != nil {
		return err
	}
	defer in.Close()
	out, err := os.OpenFile(dst, os.O_WRONLY|os.O_CREATE|os.O_EXCL, 0o600)
	if err != nil {
		return err
	}
	_, err = io.Copy(out, in)
	if cerr := out.Close(); err == nil {
		err = cerr
	}
	if err != nil {
		return fmt.Errorf("copy %s: %w", src, err)
	}
	if err := keepOwner(dst, info); err != nil {
		return err
	}
	// Chmod after creating, as the umask applies to OpenFile's mode.
	if err := os.Chmod(dst, info.Mode()&keptModeBits); err != nil {
		return err
	}
	return os.Chtimes(dst, info.ModTime(), info.ModTime())
}

// removeTree is os.RemoveAll that also removes trees holding read-only
// directories, which a volume may well contain.
func removeTree(path string) error {
	if err := os.RemoveAll(path); err == nil {
		return nil
	}
	_ = filepath.WalkDir(path, func(p string, d fs.DirEntry, err error) error {
		if err == nil && d.IsDir() {
			_ = os.Chmod(p, 0o700)
		}
		return nil
	})
	return os.RemoveAll(path)
}
