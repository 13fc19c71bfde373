// api/handlers/models.h — the lineage, model versions and aliases:
//   GET /v1/models                       every version, oldest first (the lineage);
//                                        ?view=summary: lighter (ModelStore::lineage_summary), 400 for another view;
//                                        ?fields=a,b: only those keys of each version (400 naming "fields");
//                                        ?metrics_for=p,q (summary): only those platforms' figures
//   GET /v1/models/{version}             one version (a number or an alias), with "serving":
//                                        per platform, which model serves it and why (a best-of
//                                        distill's choice and its validation scores)
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

// Each answers one route above; path parameters "version" (a number or an
// alias) and "alias". Errors: 404 for an unknown version or alias, 400
// naming the field of a bad PUT body, kDataLoss (500) for weights that fail
// their checksum.
Response handle_list_models(const Request& req, registry::ModelStore& models);
Response handle_get_model(const Request& req, registry::ModelStore& models);
Response handle_get_model_weights(const Request& req, registry::ModelStore& models);
Response handle_get_alias(const Request& req, registry::ModelStore& models);
Response handle_put_alias(const Request& req, registry::ModelStore& models);  // the actor is req.principal's name
Response handle_alias_history(const Request& req, registry::ModelStore& models);

void add_model_routes(Router& router, registry::ModelStore& models);

}  // namespace tcl::api
