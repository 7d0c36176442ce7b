"""`tracker=otel`: a run as OpenTelemetry spans sent over OTLP (`spans` makes them, `tracker`
sends them when the run ends). The SDK (`evalrun[otel]`) is imported only when it is used."""
