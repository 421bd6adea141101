"""The benchmarks behind the bench_* management commands, one module per command (api, core,
pages, summarize, turns), and what the HTTP ones share (over_http). The commands only parse
their options and call these, which write to the command's stdout."""
