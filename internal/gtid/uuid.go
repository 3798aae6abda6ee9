package gtid

import (
	"encoding/hex"
	"fmt"
	"strings"
)

// UUID is a MySQL server uuid (a GTID source id), in textual byte order.
type UUID [16]byte

// ParseUUID reads the 8-4-4-4-12 hex form.
func ParseUUID(s string) (UUID, error) {
	var u UUID
	h := strings.ReplaceAll(strings.TrimSpace(s), "-", "")
	if len(h) != 32 {
		return u, fmt.Errorf("uuid %q: want 32 hex digits", s)
	}
	if _, err := hex.Decode(u[:], []byte(h)); err != nil {
		return u, fmt.Errorf("uuid %q: %w", s, err)
	}
	return u, nil
}

func (u UUID) String() string {
	h := hex.EncodeToString(u[:])
	return h[0:8] + "-" + h[8:12] + "-" + h[12:16] + "-" + h[16:20] + "-" + h[20:]
}
