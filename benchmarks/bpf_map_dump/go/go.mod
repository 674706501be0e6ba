module bakeoff/bpf_map_dump

go 1.25.0

require (
	github.com/cilium/ebpf v0.22.0
	golang.org/x/sys v0.43.0
)
