"""Corpus: Data munging and classic algorithms."""

import heapq
import math
from collections import Counter, OrderedDict, defaultdict, deque

from .common import Case


def group_and_aggregate(rows):
    groups = defaultdict(lambda: {"count": 0, "total": 0, "names": []})
    for name, team, points in rows:
        g = groups[team]
        g["count"] += 1
        g["total"] += points
        g["names"].append(name)
    return {team: {**g, "avg": round(g["total"] / g["count"], 3)} for team, g in sorted(groups.items())}


def join_tables(users, orders):
    by_id = {u["id"]: u for u in users}
    joined = []
    for order in orders:
        user = by_id.get(order["user_id"])
        if user is None:
            continue
        joined.append({"user": user["name"], "item": order["item"], "total": order["qty"] * order["price"]})
    totals = Counter()
    for row in joined:
        totals[row["user"]] += row["total"]
    return joined, sorted(totals.items())


def pivot_table(records):
    rows = sorted({r for r, _, _ in records})
    cols = sorted({c for _, c, _ in records})
    table = {r: dict.fromkeys(cols, 0) for r in rows}
    for r, c, v in records:
        table[r][c] += v
    return [[r] + [table[r][c] for c in cols] for r in rows], cols


def levenshtein(a, b):
    prev = list(range(len(b) + 1))
    for i, ca in enumerate(a, 1):
        curr = [i]
        for j, cb in enumerate(b, 1):
            curr.append(min(prev[j] + 1, curr[j - 1] + 1, prev[j - 1] + (ca != cb)))
        prev = curr
    return prev[-1]


def longest_common_subsequence(a, b):
    table = [[""] * (len(b) + 1) for _ in range(len(a) + 1)]
    for i in range(len(a) - 1, -1, -1):
        for j in range(len(b) - 1, -1, -1):
            if a[i] == b[j]:
                table[i][j] = a[i] + table[i + 1][j + 1]
            else:
                table[i][j] = max(table[i + 1][j], table[i][j + 1], key=len)
    return table[0][0]


def knapsack(items, capacity):
    best = [0] * (capacity + 1)
    choice = [[] for _ in range(capacity + 1)]
    for name, weight, value in items:
        for cap in range(capacity, weight - 1, -1):
            candidate = best[cap - weight] + value
            if candidate > best[cap]:
                best[cap] = candidate
                choice[cap] = choice[cap - weight] + [name]
    return best[capacity], choice[capacity]


def coin_change_ways(amount, coins):
    ways = [1] + [0] * amount
    for coin in coins:
        for value in range(coin, amount + 1):
            ways[value] += ways[value - coin]
    return ways[amount]


def dijkstra(edges, source):
    graph = defaultdict(list)
    for u, v, w in edges:
        graph[u].append((v, w))
        graph[v].append((u, w))
    dist = {source: 0}
    heap = [(0, source)]
    visited = set()
    while heap:
        d, node = heapq.heappop(heap)
        if node in visited:
            continue
        visited.add(node)
        for nxt, w in graph[node]:
            nd = d + w
            if nd < dist.get(nxt, math.inf):
                dist[nxt] = nd
                heapq.heappush(heap, (nd, nxt))
    return dict(sorted(dist.items()))


def topological_sort(dependencies):
    indegree = {node: 0 for node in dependencies}
    children = defaultdict(list)
    for node, deps in dependencies.items():
        for dep in deps:
            indegree.setdefault(dep, 0)
            indegree[node] += 1
            children[dep].append(node)
    queue = deque(sorted(n for n, d in indegree.items() if d == 0))
    order = []
    while queue:
        node = queue.popleft()
        order.append(node)
        for child in sorted(children[node]):
            indegree[child] -= 1
            if indegree[child] == 0:
                queue.append(child)
    return order, len(order) == len(indegree)


class UnionFind:
    def __init__(self, n):
        self.parent = list(range(n))
        self.size = [1] * n

    def find(self, x):
        while self.parent[x] != x:
            self.parent[x] = self.parent[self.parent[x]]
            x = self.parent[x]
        return x

    def union(self, a, b):
        ra, rb = self.find(a), self.find(b)
        if ra == rb:
            return False
        if self.size[ra] < self.size[rb]:
            ra, rb = rb, ra
        self.parent[rb] = ra
        self.size[ra] += self.size[rb]
        return True


def connected_components(n, edges):
    uf = UnionFind(n)
    merged = [uf.union(a, b) for a, b in edges]
    groups = defaultdict(list)
    for node in range(n):
        groups[uf.find(node)].append(node)
    return merged, sorted(groups.values())


class LRUCache:
    def __init__(self, capacity):
        self.capacity = capacity
        self.data = OrderedDict()
        self.hits = self.misses = 0

    def get(self, key):
        if key in self.data:
            self.data.move_to_end(key)
            self.hits += 1
            return self.data[key]
        self.misses += 1
        return None

    def put(self, key, value):
        self.data[key] = value
        self.data.move_to_end(key)
        if len(self.data) > self.capacity:
            self.data.popitem(last=False)


def lru_cache_simulation(accesses, capacity):
    cache = LRUCache(capacity)
    for key in accesses:
        if cache.get(key) is None:
            cache.put(key, key.upper())
    return cache.hits, cache.misses, list(cache.data.items())


def game_of_life(live_cells, generations):
    live = set(map(tuple, live_cells))
    for _ in range(generations):
        counts = Counter((x + dx, y + dy) for x, y in live for dx in (-1, 0, 1) for dy in (-1, 0, 1)
                         if dx or dy)
        live = {cell for cell, n in counts.items() if n == 3 or (n == 2 and cell in live)}
    return sorted(live)


def spiral_order(matrix):
    rows = [list(r) for r in matrix]
    out = []
    while rows:
        out.extend(rows.pop(0))
        rows = [list(r) for r in zip(*rows)][::-1]
    return out


def mandelbrot_rows(width, height, max_iter):
    rows = []
    for j in range(height):
        row = []
        for i in range(width):
            c = complex(-2 + 2.6 * i / width, -1.2 + 2.4 * j / height)
            z = 0j
            n = 0
            while abs(z) <= 2 and n < max_iter:
                z = z * z + c
                n += 1
            row.append(" .:-=+*#%@"[n * 9 // max_iter])
        rows.append("".join(row))
    return rows


def bank_ledger(transactions):
    accounts = {}
    rejected = []
    for who, amount in transactions:
        balance = accounts.get(who, 0)
        if balance + amount < 0:
            rejected.append((who, amount))
            continue
        accounts[who] = balance + amount
    return accounts, rejected, sum(accounts.values())


def deque_rotation(values, steps):
    d = deque(values, maxlen=len(values) + 1)
    d.rotate(steps)
    d.appendleft(-1)
    d.append(99)
    popped = d.pop(), d.popleft()
    return list(d), popped, d.maxlen


_GRAPH = (("a", "b", 4), ("a", "c", 1), ("c", "b", 2), ("b", "d", 5), ("c", "d", 8), ("d", "e", 3))


CASES = [
    Case("group_and_aggregate", group_and_aggregate,
         ((("ann", "red", 10), ("bob", "blue", 7), ("cy", "red", 4), ("dee", "blue", 12), ("eve", "green", 1)),)),
    Case("join_tables", join_tables,
         (({"id": 1, "name": "ann"}, {"id": 2, "name": "bob"}),
          ({"user_id": 1, "item": "pen", "qty": 3, "price": 2}, {"user_id": 3, "item": "ink", "qty": 1, "price": 9},
           {"user_id": 2, "item": "pad", "qty": 2, "price": 5}, {"user_id": 1, "item": "cap", "qty": 1, "price": 4}))),
    Case("pivot_table", pivot_table, ((("q1", "east", 5), ("q1", "west", 3), ("q2", "east", 4), ("q1", "east", 2)),)),
    Case("levenshtein", levenshtein, ("kitten", "sitting")),
    Case("longest_common_subsequence", longest_common_subsequence, ("AGGTAB", "GXTXAYB")),
    Case("knapsack", knapsack, ((("map", 9, 150), ("compass", 13, 35), ("water", 15, 200), ("sandwich", 5, 160),
                                 ("glucose", 4, 60), ("tin", 7, 45)), 30)),
    Case("coin_change_ways", coin_change_ways, (100, (1, 5, 10, 25))),
    Case("dijkstra", dijkstra, (_GRAPH, "a")),
    Case("topological_sort", topological_sort,
         ({"app": ["lib", "utils"], "lib": ["core"], "utils": ["core"], "tests": ["app"], "core": []},)),
    Case("connected_components", connected_components, (8, ((0, 1), (2, 3), (1, 2), (5, 6), (3, 0), (7, 7)))),
    Case("lru_cache_simulation", lru_cache_simulation, (("a", "b", "a", "c", "d", "b", "a", "e", "a"), 3)),
    Case("game_of_life", game_of_life, (((1, 0), (2, 1), (0, 2), (1, 2), (2, 2)), 4)),
    Case("spiral_order", spiral_order, (((1, 2, 3, 4), (5, 6, 7, 8), (9, 10, 11, 12)),)),
    Case("mandelbrot_rows", mandelbrot_rows, (12, 6, 18)),
    Case("bank_ledger", bank_ledger, ((("ann", 50), ("bob", -10), ("ann", -20), ("bob", 30), ("ann", -40)),)),
    Case("deque_rotation", deque_rotation, ((1, 2, 3, 4, 5), 2)),
]
