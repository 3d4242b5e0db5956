"""Fleet mode: read a Prometheus server that already scrapes many inference servers.

No textual here (core). `client` speaks the Prometheus HTTP API, `queries` holds the
PromQL per figure (one query per figure for all instances), `discovery` finds which
backend each `instance` runs, `poller` turns one refresh into `EndpointReading`s.
"""
