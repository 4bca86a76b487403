"""The vector-search peers of bench/peers.sh: hnswlib and FAISS HNSW.

Driven by `peerbench vectors` over stdin/stdout, one JSON object a line
each way, on the data files that command wrote (DIR/meta.json names them):
the vectors, the queries, the exact ground truth (unfiltered and at 1 %
selectivity) and the 1 % mask. Every answer carries the wall and CPU time
of the work alone (process CPU time: every thread of this process) and the
recall@k computed here against the same ground truth file the platform
is scored on.

Commands:
  {"op": "build", "engine": "hnswlib"|"faiss", "m": 16, "efc": 200}
  {"op": "query", "engine": ..., "ef": 64, "threads": 1}
  {"op": "filtered", "engine": ..., "threads": 1}
  {"op": "quit"}
"""

import json
import os
import resource
import sys
import time

import numpy as np


def cpu():
    r = resource.getrusage(resource.RUSAGE_SELF)
    return r.ru_utime + r.ru_stime


def load(d):
    meta = json.load(open(os.path.join(d, "meta.json")))
    n, dims, nq, k = meta["n"], meta["dims"], meta["queries"], meta["k"]
    data = np.fromfile(os.path.join(d, "data.f32"), dtype="<f4").reshape(n, dims)
    queries = np.fromfile(os.path.join(d, "queries.f32"), dtype="<f4").reshape(nq, dims)
    gt = np.fromfile(os.path.join(d, "gt.i32"), dtype="<i4").reshape(nq, k)
    gtf = np.fromfile(os.path.join(d, "gtf.i32"), dtype="<i4").reshape(nq, k)
    mask = np.fromfile(os.path.join(d, "mask.u8"), dtype="u1").astype(bool)
    # Cosine: both engines rank normalised vectors by inner product
    # (hnswlib's "cosine" space normalises the same way).
    data /= np.linalg.norm(data, axis=1, keepdims=True)
    queries /= np.linalg.norm(queries, axis=1, keepdims=True)
    return meta, np.ascontiguousarray(data), np.ascontiguousarray(queries), gt, gtf, mask


def recall(ids, gt):
    k = gt.shape[1]
    hit = 0
    for row, want in zip(ids, gt):
        hit += len(set(int(x) for x in row[:k]) & set(int(x) for x in want))
    return hit / (gt.shape[0] * k)


class Peers:
    def __init__(self, d):
        self.meta, self.data, self.queries, self.gt, self.gtf, self.mask = load(d)
        self.k = self.meta["k"]
        self.idx = {}
        self.subset = np.nonzero(self.mask)[0].astype(np.int64)

    def build(self, engine, m, efc):
        n, dims = self.data.shape
        t0, c0 = time.perf_counter(), cpu()
        if engine == "hnswlib":
            import hnswlib

            p = hnswlib.Index(space="ip", dim=dims)
            p.init_index(max_elements=n, ef_construction=efc, M=m, random_seed=1)
            p.add_items(self.data, np.arange(n), num_threads=os.cpu_count())
        else:
            import faiss

            faiss.omp_set_num_threads(os.cpu_count())
            p = faiss.IndexHNSWFlat(dims, m, faiss.METRIC_INNER_PRODUCT)
            p.hnsw.efConstruction = efc
            p.add(self.data)
        t1, c1 = time.perf_counter(), cpu()
        self.idx[engine] = p
        return {"wall_s": t1 - t0, "cpu_s": c1 - c0}

    def query(self, engine, ef, threads):
        p = self.idx[engine]
        t0, c0 = time.perf_counter(), cpu()
        if engine == "hnswlib":
            p.set_ef(ef)
            ids, _ = p.knn_query(self.queries, k=self.k, num_threads=threads)
        else:
            import faiss

            faiss.omp_set_num_threads(threads)
            p.hnsw.efSearch = ef
            _, ids = p.search(self.queries, self.k)
        t1, c1 = time.perf_counter(), cpu()
        return {"wall_s": t1 - t0, "cpu_s": c1 - c0, "recall": recall(ids, self.gt)}

    def filtered(self, engine, threads):
        """Top k among the 1 % of vectors the mask accepts, as each
        library's users would ask for it: hnswlib's filter callback when
        the installed version has one (0.7 and later), otherwise its
        brute-force index over the accepted vectors; FAISS's HNSW with an
        IDSelector in the search parameters when the installed version
        takes one (1.7.3 and later), otherwise a flat index over them."""
        p = self.idx[engine]
        how = ""
        t0, c0 = time.perf_counter(), cpu()
        if engine == "hnswlib":
            import hnswlib

            try:
                p.set_ef(max(64, 2 * self.k))
                ids, _ = p.knn_query(self.queries, k=self.k, num_threads=threads, filter=lambda i: bool(self.mask[i]))
                how = "hnsw filter callback"
            except TypeError:
                # hnswlib 0.6: no filter; brute force over the accepted
                # vectors (built inside the timed part: the filter changes
                # per query in real use).
                bf = hnswlib.BFIndex(space="ip", dim=self.data.shape[1])
                bf.init_index(max_elements=len(self.subset))
                bf.add_items(self.data[self.subset], self.subset)
                ids, _ = bf.knn_query(self.queries, k=self.k)
                how = "BFIndex over the accepted vectors"
        else:
            import faiss

            faiss.omp_set_num_threads(threads)
            try:
                sel = faiss.IDSelectorBatch(self.subset)
                params = faiss.SearchParametersHNSW(sel=sel, efSearch=max(64, 2 * self.k))
                _, ids = p.search(self.queries, self.k, params=params)
                how = "HNSW with IDSelectorBatch"
            except (AttributeError, TypeError):
                flat = faiss.IndexFlatIP(self.data.shape[1])
                flat.add(self.data[self.subset])
                _, local = flat.search(self.queries, self.k)
                ids = self.subset[local]
                how = "IndexFlatIP over the accepted vectors"
        t1, c1 = time.perf_counter(), cpu()
        return {"wall_s": t1 - t0, "cpu_s": c1 - c0, "recall": recall(ids, self.gtf), "how": how}


def versions():
    out = {}
    try:
        import hnswlib

        try:
            from importlib.metadata import version

            out["hnswlib"] = version("hnswlib")
        except Exception:
            out["hnswlib"] = getattr(hnswlib, "__version__", "?")
    except ImportError as e:
        out["hnswlib_error"] = str(e)
    try:
        import faiss

        out["faiss"] = faiss.__version__
    except ImportError as e:
        out["faiss_error"] = str(e)
    out["numpy"] = np.__version__
    return out


def main():
    peers = Peers(sys.argv[1])
    print(json.dumps({"ready": True, "versions": versions()}), flush=True)
    for line in sys.stdin:
        cmd = json.loads(line)
        op = cmd["op"]
        try:
            if op == "quit":
                return
            if op == "build":
                out = peers.build(cmd["engine"], cmd["m"], cmd["efc"])
            elif op == "query":
                out = peers.query(cmd["engine"], cmd["ef"], cmd["threads"])
            elif op == "filtered":
                out = peers.filtered(cmd["engine"], cmd["threads"])
            else:
                out = {"error": "unknown op " + op}
        except Exception as e:  # the driver reports it and goes on
            out = {"error": "%s: %s" % (type(e).__name__, e)}
        print(json.dumps(out), flush=True)


if __name__ == "__main__":
    main()
