"""The TPC-H helper (tpchgen-cli) the demo, the benchmarks and the tests share; the test support itself
(generators, strategies, conformance cases, the crosscheck against pylance) lives in tests/support/."""
