// The one place where our Status meets grpc::Status, both ways.
#pragma once

#include <grpcpp/support/status.h>

#include "common/status.h"

namespace clusterd {

grpc::Status ToGrpc(const Status& status);
Status FromGrpc(const grpc::Status& status);

}  // namespace clusterd
