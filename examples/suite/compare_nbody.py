"""Work counts as a benchmark metric: nbody against a copy where one line,
`mag = dt * (d2 ** -1.5)`, reads `mag = dt / (d2 * sqrt(d2))`.

Run: python examples/suite/compare_nbody.py  (the README shows its output)."""

import importlib.util
import pathlib
import tempfile

import tracer

HERE = pathlib.Path(__file__).parent
OLD, NEW = "mag = dt * (d2 ** -1.5)", "mag = dt / (d2 * sqrt(d2))"


def version(folder: pathlib.Path, name: str, source: str):
    """nbody.py in its own folder (two checkouts of a project), imported as `name`."""
    folder.mkdir()
    path = folder / "nbody.py"
    path.write_text(source)
    spec = importlib.util.spec_from_file_location(name, path)
    module = importlib.util.module_from_spec(spec)
    spec.loader.exec_module(module)
    return module


def main():
    source = (HERE / "nbody.py").read_text()
    with tempfile.TemporaryDirectory() as tmp:
        old = version(pathlib.Path(tmp, "a"), "nbody_a", source)
        new = version(pathlib.Path(tmp, "b"), "nbody_b", source.replace(OLD, NEW))
        a = tracer.track(old.run, 30)
        b = tracer.track(new.run, 30)
        print("top callees of a:", tracer.counts(a).top(4))
        print()
        for by in ("callee", "function", "line"):
            print(tracer.compare_counts(a, b, by=by))
            print()
        print(tracer.diff(a, b))


if __name__ == "__main__":
    main()
