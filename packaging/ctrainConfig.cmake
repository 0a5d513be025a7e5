# find_package(ctrain): the targets ctrain::ctrain (process group, DDP,
# sampler, checkpoints, report) and ctrain::ctrain_wire, over libtorch.
include(CMakeFindDependencyMacro)
find_dependency(Torch)
include("${CMAKE_CURRENT_LIST_DIR}/ctrainTargets.cmake")
