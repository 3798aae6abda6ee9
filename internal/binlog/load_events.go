package binlog

import "fmt"

// A statement-based LOAD DATA is logged as its file's content, in blocks
// (Begin_load_query, then Append_block for each further block), then the
// statement (Execute_load_query, a query event that says where the file
// name is in the statement). A replica writes the blocks to a temporary
// file and runs the statement on it; mariadb-binlog prints the statement
// with LOCAL INFILE and the name of the file it wrote.

// LoadQuery locates the file of an Execute_load_query statement.
type LoadQuery struct {
	FileID uint32
	// FileStart and FileEnd delimit the clause of the statement that
	// names the file, " INFILE 'name' [IGNORE|REPLACE] INTO" (a reader
	// that writes the file elsewhere puts its name there).
	FileStart, FileEnd uint32
	// DupHandling is what LOAD DATA does with duplicate keys: 0 error,
	// 1 IGNORE, 2 REPLACE.
	DupHandling byte
}

// LoadBlockEvent is a block of a LOAD DATA file (Begin_load_query starts
// the file, Append_block adds to it).
type LoadBlockEvent struct {
	FileID uint32
	Data   []byte
}

// DeleteFileEvent drops a LOAD DATA file whose statement failed.
type DeleteFileEvent struct{ FileID uint32 }

// decodeLoadQuery reads what an Execute_load_query's post-header adds to a
// query event's (after its 13 common bytes; post is the whole length).
func decodeLoadQuery(r *reader, post int) *LoadQuery {
	if post < 26 && r.err == nil {
		r.err = fmt.Errorf("post-header of %d bytes, need 26", post)
	}
	l := &LoadQuery{FileID: r.u32("file id"), FileStart: r.u32("file name start"), FileEnd: r.u32("file name end")}
	l.DupHandling = r.u8("duplicate handling")
	r.skip(post-26, "post-header")
	return l
}

func decodeLoadBlock(body []byte) (*LoadBlockEvent, error) {
	r := &reader{b: body}
	e := &LoadBlockEvent{FileID: r.u32("file id")}
	e.Data = r.rest()
	return e, r.err
}
