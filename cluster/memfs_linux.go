package cluster

import "syscall"

// onMemoryFS reports whether path is on a tmpfs or ramfs.
func onMemoryFS(path string) bool {
	var fs syscall.Statfs_t
	if err := syscall.Statfs(path, &fs); err != nil {
		return false
	}
	const tmpfsMagic, ramfsMagic = 0x01021994, 0x858458f6
	return fs.Type == tmpfsMagic || fs.Type == ramfsMagic
}
