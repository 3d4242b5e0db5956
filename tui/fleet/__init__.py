"""Fleet mode: read a Prometheus server that already scrapes many inference servers (core, no textual):
`client` speaks its HTTP API, `queries` holds the PromQL (one query per figure for all instances, and the
discovery of each `instance`'s backend), `poller` turns one refresh into `EndpointReading`s."""
