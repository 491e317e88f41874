// Package access says who a caller is and what it may do.
//
// A route needs one Permission (read, replay, move, ...), declared beside
// it in the route table. A caller is a Principal: the operator's pair of
// secrets (API_KEY with ADMIN_SECRET), which holds every permission, the
// report token, which holds only report, or a named API key, which holds
// the permissions of its Role (viewer, operator, admin, reporter).
//
// A named key is a token "rdk_<id>_<secret>" shown once, at creation.
// D1 keeps its id, name, role, who created it and when, its expiry and
// revocation, and a hash of its secret, never the secret (api_keys). An
// authenticated request reads at most that one row, and each isolate keeps
// what it read for CacheFor: a revocation acts in every isolate within
// that time. The time a key was last used is written at most once a
// minute.
package access
