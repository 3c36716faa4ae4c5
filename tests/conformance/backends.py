"""The backends the conformance suite holds to the same semantics."""

from engine.backends import Backend, get_backend, names

# every backend by name, and durable-rules with its joins left in its network (the slower way,
# which must mean the same)
BACKENDS = [*names(), "durable-network-joins"]


def make_backend(name: str) -> Backend:
    """The backend for a name of BACKENDS."""
    if name == "durable-network-joins":
        from engine.backends.durable import DurableBackend

        return DurableBackend(network_joins=True)
    return get_backend(name)
