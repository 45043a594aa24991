package policymd

import "testing"

func TestMatchCapability(t *testing.T) {
	tests := []struct {
		pattern, capability string
		want                bool
	}{
		// Exact (seed 004 §2: file.write matches file.write).
		{"file.write", "file.write", true},
		{"file.write", "file.read", false},
		{"file.write", "file.write.all", false},
		{"file.write", "file", false},
		{"file.write", "File.Write", false},
		{"file", "file", true},
		{"file", "", false},
		// Single-segment wildcard (payment.* matches payment.send, payment.refund).
		{"payment.*", "payment.send", true},
		{"payment.*", "payment.refund", true},
		{"payment.*", "payment", false},
		{"payment.*", "payment.", false},
		{"payment.*", "payment.a.b", false},
		{"payment.*", "payments.send", false},
		{"payment.*", "x.payment.send", false},
		{"*.write", "file.write", true},
		{"*.write", "file.read", false},
		{"*.write", "write", false},
		{"a.*.c", "a.b.c", true},
		{"a.*.c", "a.b.d", false},
		{"a.*.c", "a.b.x.c", false},
		{"*.*", "a.b", true},
		{"*.*", "a", false},
		// Global wildcard (* matches every capability).
		{"*", "file.write", true},
		{"*", "payment.a.b", true},
		{"*", "x", true},
		{"*", "", true},
	}
	for _, tt := range tests {
		if got := MatchCapability(tt.pattern, tt.capability); got != tt.want {
			t.Errorf("MatchCapability(%q, %q) = %v, want %v", tt.pattern, tt.capability, got, tt.want)
		}
	}
}

func TestCheckCapabilityPattern(t *testing.T) {
	for _, ok := range []string{"file.write", "payment.*", "*", "*.write", "a.*.c", "process.exec", "x"} {
		if err := CheckCapabilityPattern(ok); err != nil {
			t.Errorf("CheckCapabilityPattern(%q) = %v, want nil", ok, err)
		}
	}
	for _, bad := range []string{"", "pay*", "payment.*x", "**", "file..write", ".file", "file.", "file write", "a.b*.c"} {
		if err := CheckCapabilityPattern(bad); err == nil {
			t.Errorf("CheckCapabilityPattern(%q) = nil, want an error", bad)
		}
	}
}
