// POST /v1/embeddings without HTTP (openai_embeddings.h): every shape of `input` becomes the
// inputs it names, bad bodies are kInvalidArgument naming the field (error.param), and the
// answer is OpenAI's list with float or base64 (little-endian float32) vectors.
#include "services/coordinator/openai_embeddings.h"

#include <string>
#include <vector>

#include "core/base/status_matchers.h"
#include "gmock/gmock.h"
#include "gtest/gtest.h"
#include "services/coordinator/openai_fields.h"

namespace tandem {
namespace {

using ::testing::HasSubstr;

// The inputs as "t:TEXT" or "i:1,2,3".
std::vector<std::string> Inputs(const v1::EmbedRequest& r) {
  std::vector<std::string> out;
  for (const v1::EmbedInput& in : r.inputs()) {
    if (in.has_text()) {
      out.push_back("t:" + in.text());
    } else {
      std::string ids = "i:";
      for (int j = 0; j < in.token_ids().ids_size(); ++j) {
        ids += (j > 0 ? "," : "") + std::to_string(in.token_ids().ids(j));
      }
      out.push_back(ids);
    }
  }
  return out;
}

struct ParseCase {
  const char* name;
  const char* body;
  std::vector<std::string> inputs;
  bool base64;
  v1::EmbedPooling pooling;
};

TEST(ParseEmbeddingsRequestTest, EveryShapeOfInput) {
  const ParseCase cases[] = {
      {"string", R"({"model":"m","input":"hi"})", {"t:hi"}, false, v1::EMBED_POOLING_UNSPECIFIED},
      {"strings", R"({"model":"m","input":["a","b"]})", {"t:a", "t:b"}, false,
       v1::EMBED_POOLING_UNSPECIFIED},
      {"ids", R"({"model":"m","input":[1,2,3]})", {"i:1,2,3"}, false,
       v1::EMBED_POOLING_UNSPECIFIED},
      {"arrays of ids", R"({"model":"m","input":[[1],[4,5]]})", {"i:1", "i:4,5"}, false,
       v1::EMBED_POOLING_UNSPECIFIED},
      {"base64, user, dimensions", R"({"model":"m","input":"x","encoding_format":"base64",
        "user":"u","dimensions":64})", {"t:x"}, true, v1::EMBED_POOLING_UNSPECIFIED},
      {"float and nulls", R"({"model":"m","input":"x","encoding_format":"float","user":null})",
       {"t:x"}, false, v1::EMBED_POOLING_UNSPECIFIED},
      {"pooling last", R"({"model":"m","input":"x","pooling":"last"})", {"t:x"}, false,
       v1::EMBED_POOLING_LAST},
      {"pooling mean", R"({"model":"m","input":"x","pooling":"mean"})", {"t:x"}, false,
       v1::EMBED_POOLING_MEAN},
  };
  for (const ParseCase& c : cases) {
    SCOPED_TRACE(c.name);
    absl::StatusOr<EmbeddingsRequest> r = ParseEmbeddingsRequest(c.body);
    ASSERT_TRUE(r.ok()) << r.status();
    EXPECT_EQ(r->model, "m");
    EXPECT_EQ(Inputs(r->embed), c.inputs);
    EXPECT_EQ(r->base64, c.base64);
    EXPECT_EQ(r->embed.pooling(), c.pooling);
  }
}

struct BadCase {
  const char* name;
  const char* body;
  const char* param;  // "" for none
  const char* message;
};

TEST(ParseEmbeddingsRequestTest, RefusesBadBodiesNamingTheField) {
  const BadCase cases[] = {
      {"not JSON", "{", "", "not JSON"},
      {"not an object", "[1]", "the body", "a JSON object"},
      {"no model", R"({"input":"x"})", "model", "is required"},
      {"no input", R"({"model":"m"})", "input", "is required"},
      {"empty string", R"({"model":"m","input":""})", "input", "empty string"},
      {"empty array", R"({"model":"m","input":[]})", "input", "empty array"},
      {"number", R"({"model":"m","input":5})", "input", "expected a string"},
      {"mixed strings", R"({"model":"m","input":["a",1]})", "input[1]", "expected a string"},
      {"empty string in array", R"({"model":"m","input":["a",""]})", "input[1]", "empty string"},
      {"mixed arrays", R"({"model":"m","input":[[1],"a"]})", "input[1]", "array of token ids"},
      {"empty inner array", R"({"model":"m","input":[[1],[]]})", "input[1]", "empty array"},
      {"negative id", R"({"model":"m","input":[1,-2]})", "input[1]", ""},
      {"fractional id", R"({"model":"m","input":[[1.5]]})", "input[0][0]", ""},
      {"huge id", R"({"model":"m","input":[4294967296]})", "input[0]", ""},
      {"bad format", R"({"model":"m","input":"x","encoding_format":"hex"})", "encoding_format",
       "\"hex\" is not"},
      {"zero dimensions", R"({"model":"m","input":"x","dimensions":0})", "dimensions", ""},
      {"bad pooling", R"({"model":"m","input":"x","pooling":"cls"})", "pooling", "\"cls\""},
      {"unknown field", R"({"model":"m","input":"x","stream":true})", "stream", "stream"},
      {"user not a string", R"({"model":"m","input":"x","user":3})", "user", ""},
      {"too deep", R"({"model":"m","input":[[[[[[[[[1]]]]]]]]]})", "", "not JSON"},
  };
  for (const BadCase& c : cases) {
    SCOPED_TRACE(c.name);
    absl::StatusOr<EmbeddingsRequest> r = ParseEmbeddingsRequest(c.body);
    ASSERT_EQ(r.status().code(), absl::StatusCode::kInvalidArgument) << r.status();
    EXPECT_THAT(std::string(r.status().message()), HasSubstr(c.message));
    EXPECT_EQ(openai::ErrorParam(r.status()).value_or(""), c.param);
  }
}

v1::EmbedResponse Answer() {
  v1::EmbedResponse response;
  response.set_model("m");
  response.set_prompt_tokens(7);
  v1::Embedding* a = response.add_embeddings();
  a->set_index(0);
  a->add_values(1.0f);
  a->add_values(-0.5f);
  v1::Embedding* b = response.add_embeddings();
  b->set_index(1);
  b->add_values(0.0f);
  b->add_values(0.25f);
  return response;
}

TEST(EmbeddingsResponseJsonTest, FloatAndBase64) {
  EmbeddingsRequest request;
  ASSERT_OK_AND_ASSIGN(std::string floats, EmbeddingsResponseJson(request, Answer()));
  EXPECT_EQ(floats,
            R"({"object": "list", "data": [{"object": "embedding", "index": 0, "embedding": )"
            R"([1.0, -0.5]}, {"object": "embedding", "index": 1, "embedding": [0.0, 0.25]}], )"
            R"("model": "m", "usage": {"prompt_tokens": 7, "total_tokens": 7}})");
  request.base64 = true;
  ASSERT_OK_AND_ASSIGN(std::string b64, EmbeddingsResponseJson(request, Answer()));
  // 1.0f = 00 00 80 3f, -0.5f = 00 00 00 bf; 0.0f = 00 00 00 00, 0.25f = 00 00 80 3e.
  EXPECT_THAT(b64, HasSubstr(R"("index": 0, "embedding": "AACAPwAAAL8=")"));
  EXPECT_THAT(b64, HasSubstr(R"("index": 1, "embedding": "AAAAAAAAgD4=")"));
}

TEST(EmbeddingsResponseJsonTest, DimensionsMustBeTheModelsWidth) {
  EmbeddingsRequest request;
  request.dimensions = 2;
  EXPECT_TRUE(EmbeddingsResponseJson(request, Answer()).ok());
  request.dimensions = 3;
  absl::StatusOr<std::string> refused = EmbeddingsResponseJson(request, Answer());
  EXPECT_EQ(refused.status().code(), absl::StatusCode::kInvalidArgument);
  EXPECT_THAT(std::string(refused.status().message()), HasSubstr("3 is not the model's 2"));
  EXPECT_EQ(openai::ErrorParam(refused.status()).value_or(""), "dimensions");
}

struct ServeCase {
  const char* name;
  const char* body;
  absl::StatusCode code;
  ErrorOrigin origin;
  bool called;
};

TEST(ServeEmbeddingsTest, ChecksTheModelAndTheLimitsBeforeEmbedding) {
  RequestLimits limits;
  limits.max_embed_inputs = 2;
  limits.max_embed_tokens = 3;
  const ServeCase cases[] = {
      {"fine", R"({"model":"m","input":["a","b"]})", absl::StatusCode::kOk, ErrorOrigin::kRequest,
       true},
      {"bad body", R"({"model":"m"})", absl::StatusCode::kInvalidArgument, ErrorOrigin::kRequest,
       false},
      {"other model", R"({"model":"x","input":"a"})", absl::StatusCode::kNotFound,
       ErrorOrigin::kRequest, false},
      {"too many inputs", R"({"model":"m","input":["a","b","c"]})",
       absl::StatusCode::kInvalidArgument, ErrorOrigin::kRequestLimit, false},
      {"too many ids", R"({"model":"m","input":[[1,2],[3,4]]})",
       absl::StatusCode::kInvalidArgument, ErrorOrigin::kRequestLimit, false},
      {"the embed's error", R"({"model":"m","input":"fail"})", absl::StatusCode::kOutOfRange,
       ErrorOrigin::kRequest, true},
  };
  for (const ServeCase& c : cases) {
    SCOPED_TRACE(c.name);
    bool called = false;
    const EmbeddingsOutcome out =
        ServeEmbeddings(c.body, "m", limits, [&](const v1::EmbedRequest& r)
                                                 -> absl::StatusOr<v1::EmbedResponse> {
          called = true;
          if (r.inputs(0).text() == "fail") return absl::OutOfRangeError("too long");
          return Answer();
        });
    EXPECT_EQ(out.status.code(), c.code) << out.status;
    EXPECT_EQ(out.origin, c.origin);
    EXPECT_EQ(called, c.called);
    EXPECT_EQ(out.body.empty(), !out.status.ok());
    if (out.origin == ErrorOrigin::kRequestLimit) {
      EXPECT_EQ(openai::ErrorParam(out.status).value_or(""), "input");
    }
  }
}

}  // namespace
}  // namespace tandem
