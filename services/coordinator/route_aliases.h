// llama-server's clients call the OpenAI routes without the /v1 prefix (/chat/completions,
// /completions, /models, /embeddings, ...): the HTTP API serves each /v1/X of the OpenAI
// routes at /X too, by rewriting the path before anything else sees it (issue 30). Tandem's
// own routes (/health, /tokenize, /detokenize) have no /v1 form.
//
// Thread-safe (no state).
#ifndef TANDEM_SERVICES_COORDINATOR_ROUTE_ALIASES_H_
#define TANDEM_SERVICES_COORDINATOR_ROUTE_ALIASES_H_

#include "services/coordinator/http_request_parser.h"

namespace tandem {

// "/chat/completions" -> "/v1/chat/completions", "/models/x" -> "/v1/models/x"; any other
// path is left as it is.
void AliasV1Route(HttpRequest& request);

}  // namespace tandem

#endif  // TANDEM_SERVICES_COORDINATOR_ROUTE_ALIASES_H_
