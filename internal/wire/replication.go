package wire

import (
	"context"
	"encoding/binary"
	"errors"
	"fmt"
	"io"

	"github.com/binlane/binlane/internal/gtid"
)

// Binlog dump flags.
const (
	// DumpNonBlock makes the server end the stream with EOF at the end of
	// its binlog instead of waiting for new events.
	DumpNonBlock uint16 = 0x01
	// DumpSendAnnotateRows (MariaDB) asks for ANNOTATE_ROWS events.
	DumpSendAnnotateRows uint16 = 0x02
)

// RegisterReplica is the payload of COM_REGISTER_SLAVE.
type RegisterReplica struct {
	ServerID uint32
	Host     string // shown by SHOW SLAVE HOSTS; may be empty
	User     string
	Password string // sent as given; binlane leaves it empty
	Port     uint16
}

// RegisterReplica announces the connection as a replica with a server id.
func (c *Conn) RegisterReplica(ctx context.Context, r RegisterReplica) error {
	b := binary.LittleEndian.AppendUint32([]byte{comRegisterSlave}, r.ServerID)
	for _, s := range []string{r.Host, r.User, r.Password} {
		if len(s) > 255 {
			return fmt.Errorf("register replica: field of %d bytes exceeds 255", len(s))
		}
		b = append(append(b, byte(len(s))), s...)
	}
	b = binary.LittleEndian.AppendUint16(b, r.Port)
	b = binary.LittleEndian.AppendUint32(b, 0) // replication rank, unused
	b = binary.LittleEndian.AppendUint32(b, 0) // master id, filled by the server
	err := c.withContext(ctx, func() error {
		if err := c.writeCommand(b); err != nil {
			return err
		}
		pkt, err := c.readPacket()
		if err != nil {
			return err
		}
		if len(pkt) == 0 || pkt[0] != 0x00 {
			return unexpectedPacket("register replica", pkt)
		}
		return nil
	})
	if err != nil {
		return fmt.Errorf("register replica with server id %d: %w", r.ServerID, err)
	}
	return nil
}

// BinlogDump is COM_BINLOG_DUMP: stream from a file and position. MariaDB
// ignores File and Pos when @slave_connect_state is set (GTID mode); send
// an empty File and Pos 4 then.
type BinlogDump struct {
	ServerID uint32
	Flags    uint16
	File     string
	Pos      uint32
}

// StartBinlogDump sends COM_BINLOG_DUMP. The server answers with events,
// which ReadEvent returns; an error (such as 1236) arrives the same way.
func (c *Conn) StartBinlogDump(ctx context.Context, d BinlogDump) error {
	b := binary.LittleEndian.AppendUint32([]byte{comBinlogDump}, d.Pos)
	b = binary.LittleEndian.AppendUint16(b, d.Flags)
	b = binary.LittleEndian.AppendUint32(b, d.ServerID)
	b = append(b, d.File...)
	return c.sendDump(ctx, b)
}

// BinlogDumpGTID is MySQL's COM_BINLOG_DUMP_GTID.
type BinlogDumpGTID struct {
	ServerID uint32
	Flags    uint16
	File     string // empty in GTID mode
	Pos      uint64 // 4 in GTID mode
	GTIDs    gtid.Set
}

// StartBinlogDumpGTID sends COM_BINLOG_DUMP_GTID. The GTID set is always
// sent with its size: the server reads both whatever the flags say.
func (c *Conn) StartBinlogDumpGTID(ctx context.Context, d BinlogDumpGTID) error {
	set := d.GTIDs.EncodeMySQL()
	b := binary.LittleEndian.AppendUint16([]byte{comBinlogDumpGTID}, d.Flags)
	b = binary.LittleEndian.AppendUint32(b, d.ServerID)
	b = binary.LittleEndian.AppendUint32(b, uint32(len(d.File)))
	b = append(b, d.File...)
	b = binary.LittleEndian.AppendUint64(b, d.Pos)
	b = binary.LittleEndian.AppendUint32(b, uint32(len(set)))
	b = append(b, set...)
	return c.sendDump(ctx, b)
}

func (c *Conn) sendDump(ctx context.Context, payload []byte) error {
	err := c.withContext(ctx, func() error { return c.writeCommand(payload) })
	if err != nil {
		return fmt.Errorf("start binlog dump: %w", err)
	}
	// From here on the connection reads events only, each kept while its
	// transaction is in flight: none needs a copy of its own.
	c.r.LendAll()
	return nil
}

// ReadEvent returns the next binlog event of a dump (header, body and any
// checksum) in a buffer the caller may keep, which nothing else writes to. It returns
// io.EOF when a non-blocking dump reaches the end of the binlog, and a
// *ServerError when the server ends the dump with an error. Use
// SetReadDeadline to bound the wait, Close to interrupt it.
func (c *Conn) ReadEvent() ([]byte, error) {
	pkt, err := c.readPacket()
	if err != nil {
		if errors.Is(err, io.EOF) {
			return nil, io.ErrUnexpectedEOF // the server hung up mid-stream
		}
		return nil, err
	}
	switch {
	case len(pkt) == 0:
		return nil, errors.New("binlog stream: empty packet")
	case pkt[0] == 0x00:
		return pkt[1:], nil
	case pkt[0] == 0xff:
		return nil, parseError(pkt)
	case isEOF(pkt):
		return nil, io.EOF
	}
	return nil, unexpectedPacket("binlog stream", pkt)
}
