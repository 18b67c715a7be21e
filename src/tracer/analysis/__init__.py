"""The bytecode analysis, run once per code object: blocks and stack depths
(`bytecode`), what each instruction does (`instructions`, the one opcode table), the
plan the core follows (`plan`) and the IR users see (`ir`)."""
