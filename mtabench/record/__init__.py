"""`mtabench record`: capture one benchmark run against the local MTA into an archive folder.

Modules: options (what to record), target (which tool, is it loopback), postfix (settings with
restore, queue counts), procs (children in their own process groups), samplers (vmstat, iostat,
queue.txt), logcut (maillog window by byte offset), manifest (run.toml), runner (the sequence).
"""
