//go:build !linux

package cluster

// onMemoryFS is not detected outside Linux.
func onMemoryFS(string) bool { return false }
