package binlog

// EventKinds returns one value of each type the decoder puts in
// Event.Data: the kinds of event every consumer that switches on
// Event.Data must answer, if only to say why it ignores one. Adding a
// kind to the decoder means adding it here (TestEventKindsComplete checks
// that every *Event type of this package is listed), and each consumer's
// test then fails until its switch has a case for it (see binlogtest).
func EventKinds() []any {
	return []any{
		// A file's frame.
		&FormatDescriptionEvent{}, &RotateEvent{}, &PreviousGTIDsEvent{}, &GTIDListEvent{},
		&BinlogCheckpointEvent{}, &HeartbeatEvent{},
		// Transactions and what they hold.
		&MariaGTIDEvent{}, &MySQLGTIDEvent{}, &QueryEvent{}, &XIDEvent{}, &XAPrepareEvent{},
		&TableMap{}, &RowsEvent{}, &AnnotateRowsEvent{}, &RowsQueryEvent{}, &TransactionPayloadEvent{},
		// Statement-based context and LOAD DATA files.
		&IntvarEvent{}, &RandEvent{}, &UserVarEvent{}, &LoadBlockEvent{}, &DeleteFileEvent{},
		// The source's own reports, and what the decoder reads past.
		&IncidentEvent{}, &SkippedEvent{},
	}
}
