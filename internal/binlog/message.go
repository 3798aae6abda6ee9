package binlog

// Message is one item of an event stream, as its reader hands it to the
// consumer: a decoded event, or a restart. It is defined here, with the
// events, because it is the seam between the stream's reader (package
// replica, or a file reader for replays and tests) and its consumer
// (txn.Assembler, the event printer): both import this package, and
// neither has to import the other.
type Message struct {
	Event   *Event
	Restart *Restart
}

// Restart is delivered after a stream reconnected and before the first
// event of the new connection: the consumer must drop any partial
// transaction it holds, because the source sends it again from its GTID
// event.
type Restart struct {
	Reason string
}
