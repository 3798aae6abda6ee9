package binlog

import (
	"context"
	"errors"
	"io"
)

// Files reads binlog files one after the other as one stream of Messages
// (events only: files never restart): the offline counterpart of a
// replication stream, for `binlane analyze --file` and for replays in
// tests. Next returns io.EOF after the last event of the last file. Not
// safe for concurrent use.
type Files struct {
	paths []string
	r     *FileReader
}

// NewFiles returns a stream of the events of the files at paths, in order.
func NewFiles(paths []string) *Files { return &Files{paths: paths} }

// Next returns the next event.
func (f *Files) Next(ctx context.Context) (Message, error) {
	for {
		if err := ctx.Err(); err != nil {
			return Message{}, err
		}
		if f.r == nil {
			if len(f.paths) == 0 {
				return Message{}, io.EOF
			}
			r, err := OpenFile(f.paths[0])
			if err != nil {
				return Message{}, err
			}
			f.r, f.paths = r, f.paths[1:]
		}
		ev, err := f.r.Next()
		if errors.Is(err, io.EOF) {
			f.r.Close()
			f.r = nil
			continue
		}
		if err != nil {
			return Message{}, err
		}
		return Message{Event: ev}, nil
	}
}
