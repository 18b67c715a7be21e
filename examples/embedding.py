"""A library built on tracer, used inside a call its user traces: the library's
own tracing is one primitive call in the user's trace.  Then eight threads
tracking at once.  Shown in the README (Embedding tracer in a library)."""

import threading

import tracer

NOTES: list[str] = []


def explain(f, x):                  # a library's helper, built on tracer
    root = tracer.track(f, x)       # its own trace, private to the library
    NOTES.append(tracer.format_node(root))
    return root.value


def square(x):
    return x * x


def user(n):                        # its user's code, which the user traces
    return explain(square, n) + 1


def threads(count=8):
    """len(trace) of square(k) tracked in `count` threads at once, by k."""
    sizes = {}

    def worker(k):
        sizes[k] = len(tracer.track(square, k).trace)

    workers = [threading.Thread(target=worker, args=(k,)) for k in range(count)]
    for w in workers:
        w.start()
    for w in workers:
        w.join()
    return dict(sorted(sizes.items()))


if __name__ == "__main__":
    root = tracer.track(user, 3)
    tracer.printlevels(root, 3)
    print(threads())
