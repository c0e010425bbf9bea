package run

// maxRSSUnit is the unit of ru_maxrss in bytes: darwin reports bytes.
const maxRSSUnit = 1
