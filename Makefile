# Two commands do all the set-up on a fresh machine:
#   make demo   builds and installs tracer for Python 3.13 and prints the trace of an example
#   make test   builds, installs the test extras and runs the tests on Python 3.12 and 3.13
PYTHONS ?= 3.12 3.13
DEMO_PYTHON ?= 3.13

.PHONY: demo test bench venv-% test-% clean

venv-%:
	@scripts/make-venv $*

demo: venv-$(DEMO_PYTHON)
	.venv-$(DEMO_PYTHON)/bin/python examples/readme_example.py

test: $(addprefix test-,$(PYTHONS))

test-%: venv-%
	.venv-$*/bin/python -m pytest -q

fuzz-%: venv-%  # generated-program differential fuzzing for FUZZ_MINUTES (default 5), e.g. make fuzz-3.12
	FUZZ_PYTHON=$* scripts/fuzz --minutes $(or $(FUZZ_MINUTES),5)

bench: venv-$(DEMO_PYTHON)
	.venv-$(DEMO_PYTHON)/bin/python bench/run.py

clean:
	rm -rf .venv-* build src/tracer/*.so src/tracer/_core.c src/tracer/analysis/*.so src/tracer/analysis/_fastplan.c src/tracer/analysis/_fastcache.c src/tracer/_arraypool.c
