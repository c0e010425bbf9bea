//go:build !darwin

package run

// maxRSSUnit is the unit of ru_maxrss in bytes: Linux and the BSDs report
// KiB.
const maxRSSUnit = 1024
