// Package avxstate clears the upper halves of the AVX registers.
//
// Some assembly in dependencies (the AVX2 ASCII checks of
// github.com/segmentio/asm, which github.com/segmentio/encoding calls on
// every string it encodes or decodes) returns without VZEROUPPER. On Intel
// processors with AVX-512 the dirty upper state then slows every
// SSE-encoded instruction that follows; SHA-256 with the SHA extensions,
// which crypto/sha256 uses, ran about 100 times slower (10 MB took 0.8 s
// instead of 8 ms) until something cleared the state. Code that hashes
// (or runs other SSE-heavy assembly) after JSON work calls Clear first.
package avxstate
