package proc

import (
	"bytes"
	"os"
	"strconv"
)

// Stat reads /proc/<pid>/stat: the start time in clock ticks after boot
// and whether the process runs (exists and is not a zombie).
func Stat(pid int) (startTicks uint64, running bool) {
	ticks, state := procState(pid)
	return ticks, state != 0 && state != 'Z'
}

// Stopped reports whether pid is stopped (SIGSTOP, or a debugger): alive
// but answering nothing.
func Stopped(pid int) bool {
	_, state := procState(pid)
	return state == 'T' || state == 't'
}

// procState reads /proc/<pid>/stat: the start time in clock ticks after
// boot and the state letter (R, S, T, Z, ...; 0 when pid is gone).
func procState(pid int) (startTicks uint64, state byte) {
	b, err := os.ReadFile("/proc/" + strconv.Itoa(pid) + "/stat")
	if err != nil {
		return 0, 0
	}
	// "pid (comm) state ppid ...": comm may hold spaces, so split after ')'.
	i := bytes.LastIndexByte(b, ')')
	if i < 0 {
		return 0, 0
	}
	f := bytes.Fields(b[i+1:])
	if len(f) < 20 || len(f[0]) != 1 {
		return 0, 0
	}
	ticks, _ := strconv.ParseUint(string(f[19]), 10, 64) // field 22, starttime
	return ticks, f[0][0]
}

// Alive reports whether pid runs and, when startTicks is known, is still
// the process that started then.
func Alive(pid int, startTicks uint64) bool {
	if pid <= 0 {
		return false
	}
	ticks, running := Stat(pid)
	return running && (startTicks == 0 || ticks == startTicks)
}
