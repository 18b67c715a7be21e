"""Corpus: Recursion."""


from .common import Case, DIRECTIONS


def factorial(n):
    return 1 if n <= 1 else n * factorial(n - 1)


def fibonacci(n):
    if n < 2:
        return n
    return fibonacci(n - 1) + fibonacci(n - 2)


def ackermann(m, n):
    if m == 0:
        return n + 1
    if n == 0:
        return ackermann(m - 1, 1)
    return ackermann(m - 1, ackermann(m, n - 1))


def is_even(n):
    return True if n == 0 else is_odd(n - 1)


def is_odd(n):
    return False if n == 0 else is_even(n - 1)


def parity_by_mutual_recursion(values):
    return [(v, is_even(v), is_odd(v)) for v in values]


def tree_statistics(tree):
    def depth(node):
        if not isinstance(node, dict):
            return 0
        return 1 + max((depth(child) for child in node.get("children", [])), default=0)

    def total(node):
        return node["value"] + sum(total(child) for child in node.get("children", []))

    def paths(node, prefix=()):
        here = prefix + (node["name"],)
        children = node.get("children", [])
        if not children:
            yield "/".join(here)
        for child in children:
            yield from paths(child, here)

    return depth(tree), total(tree), list(paths(tree))


def hanoi_moves(n, source="A", target="C", spare="B"):
    if n == 0:
        return []
    return (hanoi_moves(n - 1, source, spare, target) + [(source, target)]
            + hanoi_moves(n - 1, spare, target, source))


def permutations_recursive(items):
    if len(items) <= 1:
        return [list(items)]
    result = []
    for i, item in enumerate(items):
        for perm in permutations_recursive(items[:i] + items[i + 1:]):
            result.append([item] + perm)
    return result


def power_set(items):
    if not items:
        return [[]]
    rest = power_set(items[1:])
    return rest + [[items[0]] + subset for subset in rest]


def merge_sort(xs):
    if len(xs) <= 1:
        return list(xs)
    mid = len(xs) // 2
    left, right = merge_sort(xs[:mid]), merge_sort(xs[mid:])
    merged = []
    i = j = 0
    while i < len(left) and j < len(right):
        if left[i] <= right[j]:
            merged.append(left[i])
            i += 1
        else:
            merged.append(right[j])
            j += 1
    merged.extend(left[i:])
    merged.extend(right[j:])
    return merged


def quicksort(xs):
    if len(xs) < 2:
        return xs
    pivot, *rest = xs
    return quicksort([x for x in rest if x < pivot]) + [pivot] + quicksort([x for x in rest if x >= pivot])


def binary_search_recursive(xs, target, lo=0, hi=None):
    if hi is None:
        hi = len(xs) - 1
    if lo > hi:
        return -1
    mid = (lo + hi) // 2
    if xs[mid] == target:
        return mid
    if xs[mid] < target:
        return binary_search_recursive(xs, target, mid + 1, hi)
    return binary_search_recursive(xs, target, lo, mid - 1)


def n_queens(n):
    solutions = []

    def place(row, cols, diag1, diag2, board):
        if row == n:
            solutions.append(tuple(board))
            return
        for col in range(n):
            if col in cols or row - col in diag1 or row + col in diag2:
                continue
            place(row + 1, cols | {col}, diag1 | {row - col}, diag2 | {row + col}, board + [col])

    place(0, frozenset(), frozenset(), frozenset(), [])
    return len(solutions), solutions[:2]


def flood_fill_regions(rows):
    grid = [list(row) for row in rows]
    height, width = len(grid), len(grid[0])

    def fill(r, c, ch):
        if not (0 <= r < height and 0 <= c < width) or grid[r][c] != ch:
            return 0
        grid[r][c] = "#"
        return 1 + sum(fill(r + dr, c + dc, ch) for dr, dc in DIRECTIONS)

    sizes = []
    for r in range(height):
        for c in range(width):
            if grid[r][c] not in "#":
                sizes.append((rows[r][c], fill(r, c, grid[r][c])))
    return sorted(sizes), ["".join(row) for row in grid]


def determinant(matrix):
    if len(matrix) == 1:
        return matrix[0][0]
    if len(matrix) == 2:
        (a, b), (c, d) = matrix
        return a * d - b * c
    total = 0
    for col, value in enumerate(matrix[0]):
        minor = [row[:col] + row[col + 1:] for row in matrix[1:]]
        total += (-1) ** col * value * determinant(minor)
    return total


_TREE = {
    "name": "root", "value": 1, "children": [
        {"name": "a", "value": 2, "children": [{"name": "a1", "value": 3}, {"name": "a2", "value": 4}]},
        {"name": "b", "value": 5, "children": [{"name": "b1", "value": 6, "children": [{"name": "deep", "value": 7}]}]},
        {"name": "c", "value": 8},
    ],
}


CASES = [
    Case("factorial", factorial, (12,)),
    Case("fibonacci", fibonacci, (15,)),
    Case("ackermann", ackermann, (2, 3)),
    Case("parity_by_mutual_recursion", parity_by_mutual_recursion, ((0, 7, 10, 25),)),
    Case("tree_statistics", tree_statistics, (_TREE,)),
    Case("hanoi_moves", hanoi_moves, (4,)),
    Case("hanoi_moves_kw", hanoi_moves, (2,), {"source": "L", "target": "R", "spare": "M"}),
    Case("permutations_recursive", permutations_recursive, ("abcd",)),
    Case("power_set", power_set, ([1, 2, 3, 4],)),
    Case("merge_sort", merge_sort, ([38, 27, 43, 3, 9, 82, 10, 3],)),
    Case("quicksort", quicksort, ([5, 1, 9, 3, 7, 3, 8, 2, 6],)),
    Case("binary_search_recursive", binary_search_recursive, ([1, 3, 5, 7, 9, 11, 13, 15], 11)),
    Case("binary_search_recursive_miss", binary_search_recursive, ([1, 3, 5, 7], 4)),
    Case("n_queens", n_queens, (6,)),
    Case("flood_fill_regions", flood_fill_regions, (("aab.", "abb.", "..cc", "d.cc"),)),
    Case("determinant", determinant, (((2, -3, 1, 5), (2, 0, -1, 3), (1, 4, 5, -2), (0, 1, 2, 3)),)),
]
