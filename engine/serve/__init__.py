"""``gpusizer serve``: a local web page and a versioned HTTP API over the engine.

The layer sits between ``cli`` and ``api``. Its parts:

* ``work``: what a worker process does with one request (parse it, run it, answer it). Every
  byte of a request is read here, in a worker, never in the server's own process; a request
  names no file the worker reads (documents come attached to it).
* ``pool``: worker processes, each with the rulebase loaded once; one request at a time each,
  a per-request time limit, a bounded queue, and a replacement for a worker that dies.
* ``app``: the HTTP side (FastAPI, an optional extra): routes, the token, size limits, one
  error shape.
* ``edit``: a workload's YAML text changed at one key, the rest of the text kept; links.
* ``sweeps``: sweeps as jobs: a request worker checks the specification; the job runs its cases
  with ``engine.sweep`` on processes of its own, beside the request workers.

Only ``app`` imports FastAPI; ``work``, ``pool``, ``edit`` and ``sweeps`` need nothing beyond the engine's
own dependencies, so that they can be tested without the extra.
"""
