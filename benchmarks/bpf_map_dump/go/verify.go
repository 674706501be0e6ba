// The check after every dump (not timed), the same as dump_reader.c's: a bitmap of N bits,
// every key 0..N-1 exactly once, each with valueOf(key); and the checksum every reader,
// in C or Go, reports for the same map.
package main

const checksumMask = 1<<52 - 1

// valueOf is dump.h's dump_value_of: a bijection on u32, with valueOf(0) != 0.
func valueOf(key uint32) uint32 { return key*2654435761 ^ 0x5bd1e995 }

// mix64 is splitmix64's finaliser (dump.h's dump_mix64).
func mix64(x uint64) uint64 {
	x ^= x >> 30
	x *= 0xbf58476d1ce4e5b9
	x ^= x >> 27
	x *= 0x94d049bb133111eb
	x ^= x >> 31
	return x
}

type verdict struct {
	distinct, repeated, wrongValue, outOfRange int
	checksum                                   uint64
}

func verify(keys, vals []uint32, entries uint32, bitmap []uint64) verdict {
	clear(bitmap)
	var v verdict
	for i, key := range keys {
		if key >= entries {
			v.outOfRange++
			continue
		}
		bit := uint64(1) << (key % 64)
		if bitmap[key/64]&bit != 0 {
			v.repeated++
			continue
		}
		bitmap[key/64] |= bit
		v.distinct++
		if vals[i] != valueOf(key) {
			v.wrongValue++
		}
		v.checksum += mix64(uint64(key)<<32 | uint64(vals[i]))
	}
	v.checksum &= checksumMask
	return v
}

func requireComplete(variant string, count int, entries uint32, v verdict) {
	if count == int(entries) && v.distinct == int(entries) && v.repeated == 0 &&
		v.wrongValue == 0 && v.outOfRange == 0 {
		return
	}
	fatal("%s read %d entries: %d distinct keys of %d, %d repeated, %d with a wrong value, %d keys out of range",
		variant, count, v.distinct, entries, v.repeated, v.wrongValue, v.outOfRange)
}
