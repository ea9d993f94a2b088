#include "services/coordinator/route_aliases.h"

#include "absl/strings/match.h"
#include "absl/strings/str_cat.h"

namespace tandem {
namespace {

// The OpenAI routes' paths after /v1 (a route of another API added later belongs here too).
constexpr const char* kRoutes[] = {"/chat/completions", "/completions", "/models",
                                   "/embeddings",       "/responses",   "/messages",
                                   "/messages/count_tokens"};

}  // namespace

void AliasV1Route(HttpRequest& request) {
  const std::string& path = request.path;
  bool alias = absl::StartsWith(path, "/models/") && path.size() > 8;
  for (const char* route : kRoutes) alias = alias || path == route;
  if (alias) request.path = absl::StrCat("/v1", path);
}

}  // namespace tandem
