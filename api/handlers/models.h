// api/handlers/models.h — the lineage, model versions and aliases:
//   GET /v1/models                       every version, oldest first (the lineage)
//   GET /v1/models/{version}             one version (a number or an alias)
//   GET /v1/models/{version}/weights     its weights, checked against the stored SHA-256
//   GET /v1/aliases/{alias}              which version an alias points at
//   PUT /v1/aliases/{alias}              move it (admin): {"version", "reason"?};
//                                        400 unless the name is [a-z][a-z0-9._-]{0,63}
//   GET /v1/aliases/{alias}/history      every move: from, to, who, when, why
// Does not own the store; it must outlive the router.
#pragma once

#include "api/router.h"
#include "registry/model_store.h"

namespace tcl::api {

void add_model_routes(Router& router, registry::ModelStore& models);

}  // namespace tcl::api
