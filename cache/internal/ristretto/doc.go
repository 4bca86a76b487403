/*
 * SPDX-FileCopyrightText: © 2017-2025 Istari Digital, Inc.
 * SPDX-License-Identifier: Apache-2.0
 */

// Package ristretto is the cache core of github.com/dgraph-io/ristretto/v2
// v2.4.2 (Apache-2.0, LICENSE in this directory). cache.go, policy.go,
// sketch.go, store.go and ttl.go are upstream's but for the access buffer's
// wiring and one unused debug helper removed; it is kept here for one change
// the upstream API cannot take:
// Get must not allocate. Upstream's lossy access buffer allocated a new
// 64-item batch each time a stripe was drained to the admission policy
// (about 8 bytes per Get, plus new stripes after every GC, since they lived
// in a sync.Pool); ring.go here allocates every batch once and recycles it
// when the policy has counted it, so the edge's cache-hit path allocates
// nothing and adds no garbage for the collector. The z package (Bloom
// filter, hashing) is still imported from the upstream module.
//
// To update: copy the same files from a newer release, keep ring.go and
// re-apply the recycle field (policy.go) and its wiring in NewCache.
package ristretto
