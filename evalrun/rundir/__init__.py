"""The run directory: its one writer (`store`), its one typed reader (`log`), where run
directories go (`dirs`), what is scrubbed from them (`redact`) and what makes a run reproducible
(`provenance`)."""
