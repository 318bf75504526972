package main

import (
	"bufio"
	"os"
	"runtime"
	"strconv"
	"strings"
	"time"
)

// machine says where and when a benchmark ran: its figures mean little
// without it.
type machine struct {
	Date      string  `json:"date"`
	CPUs      int     `json:"cpus"`
	MemoryGiB float64 `json:"memoryGiB"`
	CPUModel  string  `json:"cpuModel,omitempty"`
	GoVersion string  `json:"goVersion"`
}

func thisMachine() machine {
	m := machine{Date: time.Now().UTC().Format(time.RFC3339), CPUs: runtime.NumCPU(), GoVersion: runtime.Version()}
	if kb, ok := procField("/proc/meminfo", "MemTotal:"); ok {
		m.MemoryGiB = float64(kb) / (1 << 20)
	}
	if f, err := os.Open("/proc/cpuinfo"); err == nil {
		defer f.Close()
		sc := bufio.NewScanner(f)
		for sc.Scan() {
			if k, v, ok := strings.Cut(sc.Text(), ":"); ok && strings.TrimSpace(k) == "model name" {
				m.CPUModel = strings.TrimSpace(v)
				break
			}
		}
	}
	return m
}

// procField reads the number after name in a /proc file (kB for sizes).
func procField(path, name string) (int64, bool) {
	data, err := os.ReadFile(path)
	if err != nil {
		return 0, false
	}
	for _, line := range strings.Split(string(data), "\n") {
		if rest, ok := strings.CutPrefix(line, name); ok {
			if fields := strings.Fields(rest); len(fields) > 0 {
				n, err := strconv.ParseInt(fields[0], 10, 64)
				return n, err == nil
			}
		}
	}
	return 0, false
}
