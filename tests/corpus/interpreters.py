"""Corpus: Tiny interpreters and state machines."""

import math
import operator
import re

from .common import Case, ParseError


def evaluate_rpn(expression):
    stack = []
    ops = {"+": operator.add, "-": operator.sub, "*": operator.mul, "/": operator.truediv,
           "^": lambda a, b: a ** b}
    for token in expression.split():
        if token in ops:
            b = stack.pop()
            a = stack.pop()
            stack.append(ops[token](a, b))
        else:
            stack.append(float(token) if "." in token else int(token))
    return stack.pop() if len(stack) == 1 else stack


class ExpressionParser:
    """Recursive-descent parser for + - * / and parentheses."""

    TOKEN = re.compile(r"\s*(?:(\d+\.?\d*)|(.))")

    def __init__(self, text):
        self.tokens = [num or op for num, op in self.TOKEN.findall(text)]
        self.pos = 0

    def peek(self):
        return self.tokens[self.pos] if self.pos < len(self.tokens) else None

    def take(self, expected=None):
        token = self.peek()
        if token is None or (expected is not None and token != expected):
            raise ParseError(f"expected {expected or 'token'} at {self.pos}, got {token!r}")
        self.pos += 1
        return token

    def parse(self):
        value = self.expr()
        if self.peek() is not None:
            raise ParseError(f"trailing {self.peek()!r}")
        return value

    def expr(self):
        value = self.term()
        while self.peek() in ("+", "-"):
            if self.take() == "+":
                value += self.term()
            else:
                value -= self.term()
        return value

    def term(self):
        value = self.factor()
        while self.peek() in ("*", "/"):
            if self.take() == "*":
                value *= self.factor()
            else:
                value /= self.factor()
        return value

    def factor(self):
        token = self.peek()
        if token == "-":
            self.take()
            return -self.factor()
        if token == "(":
            self.take("(")
            value = self.expr()
            self.take(")")
            return value
        token = self.take()
        if not token[0].isdigit():
            raise ParseError(f"unexpected {token!r}")
        return float(token) if "." in token else int(token)


def parse_arithmetic(text):
    return ExpressionParser(text).parse()


def evaluate_lisp(expr, env=None):
    env = {} if env is None else env
    if isinstance(expr, (int, float)):
        return expr
    if isinstance(expr, str):
        return env[expr]
    op, *args = expr
    match op:
        case "let":
            name, value, body = args
            return evaluate_lisp(body, {**env, name: evaluate_lisp(value, env)})
        case "if":
            cond, then, other = args
            return evaluate_lisp(then if evaluate_lisp(cond, env) else other, env)
        case "lambda":
            params, body = args
            return lambda *vals: evaluate_lisp(body, {**env, **dict(zip(params, vals))})
        case "+" | "*" | "-" | "<":
            vals = [evaluate_lisp(a, env) for a in args]
            if op == "+":
                return sum(vals)
            if op == "*":
                return math.prod(vals)
            if op == "-":
                return vals[0] - sum(vals[1:])
            return vals[0] < vals[1]
        case _:
            fn = evaluate_lisp(op, env)
            return fn(*[evaluate_lisp(a, env) for a in args])


def run_brainfuck(program, input_bytes=()):
    tape = [0] * 32
    ptr = pc = 0
    out = []
    inp = list(input_bytes)
    jumps = {}
    stack = []
    for i, ch in enumerate(program):
        if ch == "[":
            stack.append(i)
        elif ch == "]":
            j = stack.pop()
            jumps[i], jumps[j] = j, i
    while pc < len(program):
        ch = program[pc]
        if ch == ">":
            ptr += 1
        elif ch == "<":
            ptr -= 1
        elif ch == "+":
            tape[ptr] = (tape[ptr] + 1) % 256
        elif ch == "-":
            tape[ptr] = (tape[ptr] - 1) % 256
        elif ch == ".":
            out.append(tape[ptr])
        elif ch == ",":
            tape[ptr] = inp.pop(0) if inp else 0
        elif ch == "[" and tape[ptr] == 0:
            pc = jumps[pc]
        elif ch == "]" and tape[ptr] != 0:
            pc = jumps[pc]
        pc += 1
    return out


def register_machine(program):
    """Execute a list of (opcode, operands...) tuples on a small register file."""
    regs = dict.fromkeys("abcd", 0)
    pc = 0
    executed = 0
    while 0 <= pc < len(program) and executed < 1000:
        op, *operands = program[pc]
        executed += 1
        match op, operands:
            case "set", [reg, value]:
                regs[reg] = regs.get(value, value) if isinstance(value, str) else value
            case "add", [reg, value]:
                regs[reg] += regs[value] if isinstance(value, str) else value
            case "mul", [reg, value]:
                regs[reg] *= regs[value] if isinstance(value, str) else value
            case "jnz", [reg, offset] if regs[reg] != 0:
                pc += offset
                continue
            case "jnz", _:
                pass
            case _:
                raise ValueError(op)
        pc += 1
    return regs, executed


def divisible_by_three_dfa(bit_strings):
    transitions = {(0, "0"): 0, (0, "1"): 1, (1, "0"): 2, (1, "1"): 0, (2, "0"): 1, (2, "1"): 2}
    results = []
    for bits in bit_strings:
        state = 0
        for bit in bits:
            state = transitions[(state, bit)]
        results.append((bits, state == 0, int(bits, 2) % 3 == 0))
    return results


class Turnstile:
    def __init__(self):
        self.state = "locked"
        self.coins = 0
        self.passes = 0
        self.alarms = 0

    def handle(self, event):
        match (self.state, event):
            case ("locked", "coin"):
                self.state = "unlocked"
                self.coins += 1
            case ("locked", "push"):
                self.alarms += 1
            case ("unlocked", "push"):
                self.state = "locked"
                self.passes += 1
            case ("unlocked", "coin"):
                self.coins += 1
        return self.state


def turnstile_state_machine(events):
    machine = Turnstile()
    states = [machine.handle(e) for e in events]
    return states, machine.coins, machine.passes, machine.alarms


def csv_line_parser(lines):
    rows = []
    for line in lines:
        fields, current, state = [], [], "start"
        for ch in line:
            if state in ("start", "plain"):
                if ch == '"' and state == "start":
                    state = "quoted"
                elif ch == ",":
                    fields.append("".join(current))
                    current, state = [], "start"
                else:
                    current.append(ch)
                    state = "plain"
            elif state == "quoted":
                if ch == '"':
                    state = "quote_in_quoted"
                else:
                    current.append(ch)
            elif state == "quote_in_quoted":
                if ch == '"':
                    current.append('"')
                    state = "quoted"
                elif ch == ",":
                    fields.append("".join(current))
                    current, state = [], "start"
        fields.append("".join(current))
        rows.append(fields)
    return rows


def vending_machine(events):
    prices = {"cola": 150, "chips": 100}
    credit = 0
    dispensed = []
    for event in events:
        kind, _, arg = event.partition(":")
        if kind == "coin":
            credit += int(arg)
        elif kind == "select":
            price = prices.get(arg)
            if price is None:
                dispensed.append(f"unknown {arg}")
            elif credit >= price:
                credit -= price
                dispensed.append(arg)
            else:
                dispensed.append(f"need {price - credit}")
        elif kind == "refund":
            dispensed.append(f"refund {credit}")
            credit = 0
    return dispensed, credit


_LISP_PROGRAM = (
    "let", "square", ("lambda", ("x",), ("*", "x", "x")),
    ("let", "n", 7,
     ("if", ("<", "n", 10),
      ("+", ("square", "n"), ("square", 3), ("-", 10, 4)),
      0)),
)


_REGISTER_PROGRAM = (
    ("set", "a", 1), ("set", "b", 6),
    ("mul", "a", "b"), ("add", "b", -1), ("jnz", "b", -2),
    ("set", "c", "a"), ("add", "c", 1),
)


CASES = [
    Case("evaluate_rpn", evaluate_rpn, ("3 4 + 2 * 7 - 2 ^",)),
    Case("evaluate_rpn_float", evaluate_rpn, ("1.5 2 * 4 /",)),
    Case("parse_arithmetic", parse_arithmetic, ("2 * (3 + 4) - 10 / 4 + -(1 - 3)",)),
    Case("parse_arithmetic_nested", parse_arithmetic, ("((1+2)*(3+4))*((5))",)),
    Case("evaluate_lisp", evaluate_lisp, (_LISP_PROGRAM,)),
    Case("run_brainfuck_add", run_brainfuck, (",>,[<+>-]<.", (3, 4))),
    Case("run_brainfuck_multiply", run_brainfuck, ("++++++++[>++++++++<-]>+.+.",)),
    Case("register_machine", register_machine, (_REGISTER_PROGRAM,)),
    Case("divisible_by_three_dfa", divisible_by_three_dfa, (("0", "11", "110", "111", "1001", "10010"),)),
    Case("turnstile_state_machine", turnstile_state_machine, (("push", "coin", "coin", "push", "push", "coin"),)),
    Case("csv_line_parser", csv_line_parser, (('a,b,c', '"x, y",2,"say ""hi"""', ',,end'),)),
    Case("vending_machine", vending_machine,
         (("coin:100", "select:cola", "coin:100", "select:cola", "select:tea", "coin:25", "refund"),)),
    Case("raises_index_error_rpn_underflow", evaluate_rpn, ("1 +",), raises=IndexError),
    Case("raises_parse_error_deep", parse_arithmetic, ("(1 + (2 * (3 - ))",), raises=ParseError),
]
