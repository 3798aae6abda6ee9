package binlog

import (
	"fmt"
	"math"
)

// The events a source writes before a statement so that the statement runs
// on a replica as it ran on the source: the auto-increment values it used
// (Intvar), the seed of RAND() (Rand) and the user variables it read
// (User_var). They belong to the Query event that follows them.

// IntvarEvent carries LAST_INSERT_ID() or the next auto-increment value a
// statement used.
type IntvarEvent struct {
	Type  byte // IntvarLastInsertID or IntvarInsertID
	Value uint64
}

// Intvar event types.
const (
	IntvarLastInsertID byte = 1
	IntvarInsertID     byte = 2
)

// RandEvent carries the seeds RAND() started from.
type RandEvent struct{ Seed1, Seed2 uint64 }

// UserVarEvent carries the value of a user variable a statement read.
type UserVarEvent struct {
	Name string
	Null bool
	// Type is the value's type (UserVar*); Collation the collation id of a
	// string value.
	Type      byte
	Collation uint32
	// Value is the raw value: 8 bytes little-endian for integers and
	// doubles, the bytes for strings, precision, scale and the binary
	// decimal for decimals. It is a copy (the event buffer is reused).
	Value    []byte
	Unsigned bool
}

// User variable value types (the server's Item_result).
const (
	UserVarString  byte = 0
	UserVarReal    byte = 1
	UserVarInt     byte = 2
	UserVarDecimal byte = 4
)

func decodeIntvar(body []byte) (*IntvarEvent, error) {
	r := &reader{b: body}
	e := &IntvarEvent{Type: r.u8("intvar type"), Value: r.u64("intvar value")}
	if r.err == nil && e.Type != IntvarLastInsertID && e.Type != IntvarInsertID {
		return nil, fmt.Errorf("intvar event of unknown type %d", e.Type)
	}
	return e, r.err
}

func decodeRand(body []byte) (*RandEvent, error) {
	r := &reader{b: body}
	e := &RandEvent{Seed1: r.u64("rand seed1"), Seed2: r.u64("rand seed2")}
	return e, r.err
}

func decodeUserVar(body []byte) (*UserVarEvent, error) {
	r := &reader{b: body}
	n := r.u32("user variable name length")
	if n > 64*4 {
		return nil, fmt.Errorf("user variable name of %d bytes", n)
	}
	e := &UserVarEvent{Name: string(r.take(int(n), "user variable name"))}
	e.Null = r.u8("user variable null flag") != 0
	if e.Null || r.err != nil {
		return e, r.err
	}
	e.Type = r.u8("user variable type")
	e.Collation = r.u32("user variable collation")
	vlen := r.u32("user variable value length")
	e.Value = append([]byte(nil), r.take(int(vlen), "user variable value")...)
	if r.err == nil && r.remaining() > 0 {
		e.Unsigned = r.u8("user variable flags")&1 != 0
	}
	if r.err != nil {
		return nil, r.err
	}
	switch e.Type {
	case UserVarInt, UserVarReal:
		if len(e.Value) != 8 {
			return nil, fmt.Errorf("user variable @%s: %d-byte number", e.Name, len(e.Value))
		}
	case UserVarDecimal:
		if len(e.Value) < 2 {
			return nil, fmt.Errorf("user variable @%s: decimal without precision and scale", e.Name)
		}
		if _, err := e.DecimalText(); err != nil {
			return nil, err
		}
	case UserVarString:
	default:
		return nil, fmt.Errorf("user variable @%s of unknown type %d", e.Name, e.Type)
	}
	return e, nil
}

// Int returns an integer variable's value as the server stored it.
func (e *UserVarEvent) Int() (int64, uint64) {
	u := uint64(0)
	for i := 7; i >= 0; i-- {
		u = u<<8 | uint64(e.Value[i])
	}
	return int64(u), u
}

// Real returns a double variable's value.
func (e *UserVarEvent) Real() float64 {
	_, u := e.Int()
	return math.Float64frombits(u)
}

// DecimalText returns a decimal variable's value as text.
func (e *UserVarEvent) DecimalText() (string, error) {
	prec, scale := int(e.Value[0]), int(e.Value[1])
	out, err := AppendDecimal(nil, e.Value[2:], prec, scale)
	if err != nil {
		return "", fmt.Errorf("user variable @%s: %w", e.Name, err)
	}
	return string(out), nil
}
