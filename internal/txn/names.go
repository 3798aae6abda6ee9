package txn

import (
	"fmt"
	"strings"
	"unicode/utf8"

	"golang.org/x/text/encoding"
	"golang.org/x/text/encoding/charmap"
	"golang.org/x/text/encoding/japanese"
	"golang.org/x/text/encoding/korean"
	"golang.org/x/text/encoding/simplifiedchinese"
	"golang.org/x/text/encoding/traditionalchinese"
)

// Names reads the table names of a statement written in its client's
// character set. A latin1 client that creates a table named with byte
// 0x83 logs that byte; the server itself calls the table "ƒ" (UTF-8), and
// so must every query binlane makes about it. Charset names the character
// set of a collation id (the target's collations); nil knows only the
// UTF-8 ones.
type Names struct {
	Charset func(collation uint16) (charset string, ok bool)
}

// decoder returns how to read identifiers of a statement in client
// collation id (nil: they are UTF-8 already). Names it cannot read leave
// the statement's tables unknown: its default schema then stands for them
// (whole-schema fingerprints and filtering).
func (n Names) decoder(collation uint16) (decoder, error) {
	switch collation {
	case 0, 33, 45, 46, 83, 224: // absent, or the usual UTF-8 ones
		return nil, nil
	}
	if n.Charset == nil {
		return decoderFor(""), nil // only ASCII names can be read
	}
	cs, ok := n.Charset(collation)
	if !ok {
		return nil, fmt.Errorf("statement in client collation %d, which the target does not know", collation)
	}
	switch cs {
	case "utf8mb4", "utf8mb3", "utf8":
		return nil, nil
	}
	return decoderFor(cs), nil
}

func asciiNames(names []TableName) bool {
	for _, n := range names {
		for _, s := range [2]string{n.Schema, n.Table} {
			for i := 0; i < len(s); i++ {
				if s[i] >= 0x80 {
					return false
				}
			}
		}
	}
	return true
}

// decoder converts a name to UTF-8; false when it cannot be read exactly.
type decoder func(string) (string, bool)

// decoderFor returns the decoder of a MariaDB/MySQL character set: names
// that are not ASCII in a character set binlane cannot read are unknown.
func decoderFor(charset string) decoder {
	switch charset {
	case "utf8mb4", "utf8mb3", "utf8":
		return func(s string) (string, bool) { return s, utf8.ValidString(s) }
	case "latin1":
		return mariaLatin1
	}
	if enc := encodings[charset]; enc != nil {
		return func(s string) (string, bool) {
			out, err := enc.NewDecoder().String(s)
			if err != nil || !utf8.ValidString(out) || strings.ContainsRune(out, utf8.RuneError) {
				return s, false
			}
			return out, true
		}
	}
	return func(s string) (string, bool) { return s, asciiNames([]TableName{{Table: s}}) }
}

var encodings = map[string]encoding.Encoding{
	"latin2": charmap.ISO8859_2, "cp1250": charmap.Windows1250, "cp1251": charmap.Windows1251,
	"cp1256": charmap.Windows1256, "cp1257": charmap.Windows1257, "koi8r": charmap.KOI8R, "koi8u": charmap.KOI8U,
	"greek": charmap.ISO8859_7, "hebrew": charmap.ISO8859_8, "latin5": charmap.ISO8859_9, "latin7": charmap.ISO8859_13,
	"cp850": charmap.CodePage850, "cp852": charmap.CodePage852, "cp866": charmap.CodePage866,
	"macroman": charmap.Macintosh, "tis620": charmap.Windows874,
	"gbk": simplifiedchinese.GBK, "gb2312": simplifiedchinese.GBK, "big5": traditionalchinese.Big5,
	"sjis": japanese.ShiftJIS, "cp932": japanese.ShiftJIS, "ujis": japanese.EUCJP, "eucjpms": japanese.EUCJP,
	"euckr": korean.EUCKR,
}

// mariaLatin1 reads the server's latin1: Windows-1252, except that the
// five bytes 1252 leaves undefined (0x81, 0x8D, 0x8F, 0x90, 0x9D) stand for
// the C1 controls of the same number.
func mariaLatin1(s string) (string, bool) {
	var b strings.Builder
	for i := 0; i < len(s); i++ {
		c := s[i]
		switch c {
		case 0x81, 0x8D, 0x8F, 0x90, 0x9D:
			b.WriteRune(rune(c))
		default:
			b.WriteRune(charmap.Windows1252.DecodeByte(c))
		}
	}
	return b.String(), true
}
