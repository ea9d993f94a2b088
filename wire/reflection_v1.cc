#include "wire/reflection_v1.h"

#include <memory>
#include <string>
#include <vector>

#include "absl/container/flat_hash_set.h"
#include "absl/strings/str_cat.h"
#include "google/protobuf/descriptor.h"
#include "google/protobuf/descriptor.pb.h"
#include "grpc/reflection/v1/reflection.grpc.pb.h"
#include "grpcpp/impl/server_builder_option.h"
#include "grpcpp/impl/server_builder_plugin.h"
#include "grpcpp/impl/server_initializer.h"

namespace tandem {
namespace {

namespace pb = ::google::protobuf;
namespace rv1 = ::grpc::reflection::v1;

class ReflectionV1Service final : public rv1::ServerReflection::Service {
 public:
  void SetServiceList(const std::vector<std::string>* services) { services_ = services; }

  grpc::Status ServerReflectionInfo(
      grpc::ServerContext* context,
      grpc::ServerReaderWriter<rv1::ServerReflectionResponse, rv1::ServerReflectionRequest>* stream)
      override {
    absl::flat_hash_set<std::string> sent;  // files this stream already has
    rv1::ServerReflectionRequest request;
    while (!context->IsCancelled() && stream->Read(&request)) {
      rv1::ServerReflectionResponse response;
      response.set_valid_host(request.host());
      *response.mutable_original_request() = request;
      Answer(request, &sent, &response);
      if (!stream->Write(response)) break;
    }
    return grpc::Status::OK;
  }

 private:
  static void Error(grpc::StatusCode code, const std::string& message,
                    rv1::ServerReflectionResponse* response) {
    response->mutable_error_response()->set_error_code(static_cast<int32_t>(code));
    response->mutable_error_response()->set_error_message(message);
  }

  // Adds `file` and, depth first, the files it imports that this stream has not had yet.
  static void AddFile(const pb::FileDescriptor* file, absl::flat_hash_set<std::string>* sent,
                      rv1::FileDescriptorResponse* out) {
    if (!sent->insert(file->name()).second) return;
    pb::FileDescriptorProto proto;
    file->CopyTo(&proto);
    proto.SerializeToString(out->add_file_descriptor_proto());
    for (int i = 0; i < file->dependency_count(); ++i) AddFile(file->dependency(i), sent, out);
  }

  static void SendFile(const pb::FileDescriptor* file, const std::string& what,
                       absl::flat_hash_set<std::string>* sent,
                       rv1::ServerReflectionResponse* response) {
    if (file == nullptr) return Error(grpc::StatusCode::NOT_FOUND, what + " not found", response);
    // The client asked for it: send the file itself even if this stream had it before.
    sent->erase(file->name());
    AddFile(file, sent, response->mutable_file_descriptor_response());
  }

  void Answer(const rv1::ServerReflectionRequest& request, absl::flat_hash_set<std::string>* sent,
              rv1::ServerReflectionResponse* response) const {
    const pb::DescriptorPool* pool = pb::DescriptorPool::generated_pool();
    using R = rv1::ServerReflectionRequest;
    switch (request.message_request_case()) {
      case R::kListServices:
        if (services_ != nullptr) {
          for (const std::string& name : *services_) {
            response->mutable_list_services_response()->add_service()->set_name(name);
          }
        }
        return;
      case R::kFileByFilename:
        return SendFile(pool->FindFileByName(request.file_by_filename()),
                        "file " + request.file_by_filename(), sent, response);
      case R::kFileContainingSymbol:
        return SendFile(pool->FindFileContainingSymbol(request.file_containing_symbol()),
                        "symbol " + request.file_containing_symbol(), sent, response);
      case R::kFileContainingExtension: {
        const rv1::ExtensionRequest& e = request.file_containing_extension();
        const pb::Descriptor* type = pool->FindMessageTypeByName(e.containing_type());
        const pb::FieldDescriptor* field =
            type == nullptr ? nullptr : pool->FindExtensionByNumber(type, e.extension_number());
        return SendFile(
            field == nullptr ? nullptr : field->file(),
            absl::StrCat("extension ", e.extension_number(), " of ", e.containing_type()), sent,
            response);
      }
      case R::kAllExtensionNumbersOfType: {
        const std::string& name = request.all_extension_numbers_of_type();
        const pb::Descriptor* type = pool->FindMessageTypeByName(name);
        if (type == nullptr) {
          return Error(grpc::StatusCode::NOT_FOUND, "type " + name + " not found", response);
        }
        std::vector<const pb::FieldDescriptor*> extensions;
        pool->FindAllExtensions(type, &extensions);
        rv1::ExtensionNumberResponse* out = response->mutable_all_extension_numbers_response();
        out->set_base_type_name(name);
        for (const pb::FieldDescriptor* f : extensions) out->add_extension_number(f->number());
        return;
      }
      default:
        return Error(grpc::StatusCode::UNIMPLEMENTED, "set one of the message_request fields",
                     response);
    }
  }

  const std::vector<std::string>* services_ = nullptr;  // the server's, set before serving
};

class ReflectionV1Plugin final : public grpc::ServerBuilderPlugin {
 public:
  std::string name() override { return "tandem_reflection_v1"; }
  void InitServer(grpc::ServerInitializer* si) override { si->RegisterService(service_); }
  void Finish(grpc::ServerInitializer* si) override {
    service_->SetServiceList(si->GetServiceList());
  }
  void ChangeArguments(const std::string&, void*) override {}
  bool has_sync_methods() const override { return true; }

 private:
  std::shared_ptr<ReflectionV1Service> service_ = std::make_shared<ReflectionV1Service>();
};

class ReflectionV1Option final : public grpc::ServerBuilderOption {
 public:
  void UpdateArguments(grpc::ChannelArguments*) override {}
  void UpdatePlugins(std::vector<std::unique_ptr<grpc::ServerBuilderPlugin>>* plugins) override {
    plugins->push_back(std::make_unique<ReflectionV1Plugin>());
  }
};

}  // namespace

void AddReflectionV1(grpc::ServerBuilder* builder) {
  builder->SetOption(std::make_unique<ReflectionV1Option>());
}

}  // namespace tandem
