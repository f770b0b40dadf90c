// libLLVM's C API, loaded at run time with dlopen: bronze builds, imports
// and runs without LLVM, which only Apple .metallib files need (AIR is LLVM
// bitcode). The C API is LLVM's stable one, so any libLLVM from 17 (opaque
// pointers only: Apple's typed-pointer AIR is upgraded on reading) serves;
// $BRONZE_LLVM_LIBRARY names one, else the newest of the usual names loads.
// Only the entry points bronze uses are declared, once, in the X-macro.
#pragma once

#include <cstddef>
#include <cstdint>
#include <string>
#include <vector>

namespace bronze::jit::llvm {

using LLVMBool = int;
using LLVMContextRef = struct LLVMOpaqueContext*;
using LLVMModuleRef = struct LLVMOpaqueModule*;
using LLVMValueRef = struct LLVMOpaqueValue*;
using LLVMTypeRef = struct LLVMOpaqueType*;
using LLVMUseRef = struct LLVMOpaqueUse*;
using LLVMMemoryBufferRef = struct LLVMOpaqueMemoryBuffer*;
using LLVMDiagnosticInfoRef = struct LLVMOpaqueDiagnosticInfo*;
using LLVMTargetDataRef = struct LLVMOpaqueTargetData*;
using LLVMTargetRef = struct LLVMTarget*;
using LLVMTargetMachineRef = struct LLVMOpaqueTargetMachine*;
using LLVMPassBuilderOptionsRef = struct LLVMOpaquePassBuilderOptions*;
using LLVMErrorRef = struct LLVMOpaqueError*;
using LLVMDiagnosticHandler = void (*)(LLVMDiagnosticInfoRef, void*);
using LLVMFatalErrorHandler = void (*)(const char* reason);
constexpr int kDiagnosticError = 0;  // LLVMDSError
constexpr int kCodeGenLevelAggressive = 3, kRelocPIC = 2, kCodeModelDefault = 0, kAssemblyFile = 0, kObjectFile = 1;
constexpr int kLocalDynamicTLS = 2, kExternalLinkage = 0, kInternalLinkage = 8, kReturnStatusAction = 2;

// X(return type, name, parameter list)
#define BRONZE_LLVM_API(X)                                                                                 \
  X(void, LLVMGetVersion, (unsigned*, unsigned*, unsigned*))                                               \
  X(void, LLVMDisposeMessage, (char*))                                                                     \
  X(void, LLVMInstallFatalErrorHandler, (LLVMFatalErrorHandler))                                           \
  X(LLVMContextRef, LLVMContextCreate, ())                                                                 \
  X(void, LLVMContextDispose, (LLVMContextRef))                                                            \
  X(void, LLVMContextSetDiagnosticHandler, (LLVMContextRef, LLVMDiagnosticHandler, void*))                 \
  X(char*, LLVMGetDiagInfoDescription, (LLVMDiagnosticInfoRef))                                            \
  X(int, LLVMGetDiagInfoSeverity, (LLVMDiagnosticInfoRef))                                                 \
  X(LLVMMemoryBufferRef, LLVMCreateMemoryBufferWithMemoryRange, (const char*, std::size_t, const char*,    \
                                                                 LLVMBool))                               \
  X(void, LLVMDisposeMemoryBuffer, (LLVMMemoryBufferRef))                                                  \
  X(LLVMBool, LLVMParseBitcodeInContext2, (LLVMContextRef, LLVMMemoryBufferRef, LLVMModuleRef*))           \
  X(void, LLVMDisposeModule, (LLVMModuleRef))                                                              \
  X(unsigned, LLVMGetNamedMetadataNumOperands, (LLVMModuleRef, const char*))                               \
  X(void, LLVMGetNamedMetadataOperands, (LLVMModuleRef, const char*, LLVMValueRef*))                       \
  X(unsigned, LLVMGetMDNodeNumOperands, (LLVMValueRef))                                                    \
  X(void, LLVMGetMDNodeOperands, (LLVMValueRef, LLVMValueRef*))                                            \
  X(const char*, LLVMGetMDString, (LLVMValueRef, unsigned*))                                               \
  X(LLVMValueRef, LLVMIsAMDNode, (LLVMValueRef))                                                           \
  X(LLVMValueRef, LLVMIsAConstantInt, (LLVMValueRef))                                                      \
  X(unsigned long long, LLVMConstIntGetZExtValue, (LLVMValueRef))                                          \
  X(const char*, LLVMGetValueName2, (LLVMValueRef, std::size_t*))                                          \
  X(LLVMValueRef, LLVMGetFirstFunction, (LLVMModuleRef))                                                   \
  X(LLVMValueRef, LLVMGetNextFunction, (LLVMValueRef))                                                     \
  X(LLVMBool, LLVMIsDeclaration, (LLVMValueRef))                                                           \
  X(LLVMUseRef, LLVMGetFirstUse, (LLVMValueRef))                                                           \
  X(LLVMUseRef, LLVMGetNextUse, (LLVMUseRef))                                                              \
  X(LLVMValueRef, LLVMGetFirstGlobal, (LLVMModuleRef))                                                     \
  X(LLVMValueRef, LLVMGetNextGlobal, (LLVMValueRef))                                                       \
  X(LLVMTypeRef, LLVMTypeOf, (LLVMValueRef))                                                               \
  X(LLVMTypeRef, LLVMGlobalGetValueType, (LLVMValueRef))                                                   \
  X(unsigned, LLVMGetPointerAddressSpace, (LLVMTypeRef))                                                   \
  X(LLVMTargetDataRef, LLVMGetModuleDataLayout, (LLVMModuleRef))                                           \
  X(unsigned long long, LLVMABISizeOfType, (LLVMTargetDataRef, LLVMTypeRef))                              \
  /* Retargeting a module and building it: lowering AIR for a backend. */                                 \
  X(LLVMValueRef, LLVMGetNamedFunction, (LLVMModuleRef, const char*))                                      \
  X(void, LLVMSetValueName2, (LLVMValueRef, const char*, std::size_t))                                     \
  X(unsigned, LLVMCountParamTypes, (LLVMTypeRef))                                                          \
  X(LLVMTypeRef, LLVMGetReturnType, (LLVMTypeRef))                                                         \
  X(void, LLVMGetParamTypes, (LLVMTypeRef, LLVMTypeRef*))                                                  \
  X(char*, LLVMPrintTypeToString, (LLVMTypeRef))                                                           \
  X(void, LLVMSetLinkage, (LLVMValueRef, int))                                                             \
  X(void, LLVMSetThreadLocal, (LLVMValueRef, LLVMBool))                                                    \
  X(LLVMValueRef, LLVMGetNamedGlobal, (LLVMModuleRef, const char*))                                        \
  X(void, LLVMSetInitializer, (LLVMValueRef, LLVMValueRef))                                                \
  X(void, LLVMSetExternallyInitialized, (LLVMValueRef, LLVMBool))                                          \
  X(void, LLVMSetGlobalConstant, (LLVMValueRef, LLVMBool))                                                 \
  X(LLVMValueRef, LLVMConstInt, (LLVMTypeRef, unsigned long long, LLVMBool))                               \
  X(LLVMValueRef, LLVMConstReal, (LLVMTypeRef, double))                                                    \
  X(void, LLVMSetThreadLocalMode, (LLVMValueRef, int))                                                     \
  X(void, LLVMSetTarget, (LLVMModuleRef, const char*))                                                     \
  X(void, LLVMSetDataLayout, (LLVMModuleRef, const char*))                                                 \
  X(LLVMMemoryBufferRef, LLVMCreateMemoryBufferWithMemoryRangeCopy, (const char*, std::size_t, const char*)) \
  X(LLVMBool, LLVMParseIRInContext, (LLVMContextRef, LLVMMemoryBufferRef, LLVMModuleRef*, char**))         \
  X(char*, LLVMPrintModuleToString, (LLVMModuleRef))                                                       \
  X(LLVMValueRef, LLVMGetInitializer, (LLVMValueRef))                                                      \
  X(int, LLVMGetNumOperands, (LLVMValueRef))                                                               \
  X(LLVMValueRef, LLVMGetOperand, (LLVMValueRef, unsigned))                                                \
  X(LLVMValueRef, LLVMIsAFunction, (LLVMValueRef))                                                         \
  X(void, LLVMDeleteGlobal, (LLVMValueRef))                                                                \
  X(LLVMBool, LLVMLinkModules2, (LLVMModuleRef, LLVMModuleRef))                                            \
  X(LLVMBool, LLVMVerifyModule, (LLVMModuleRef, int, char**))                                              \
  X(char*, LLVMGetDefaultTargetTriple, ())                                                                 \
  X(char*, LLVMGetHostCPUName, ())                                                                         \
  X(char*, LLVMGetHostCPUFeatures, ())                                                                     \
  X(void, LLVMInitializeX86TargetInfo, ())                                                                 \
  X(void, LLVMInitializeX86Target, ())                                                                     \
  X(void, LLVMInitializeX86TargetMC, ())                                                                   \
  X(void, LLVMInitializeX86AsmPrinter, ())                                                                 \
  X(LLVMBool, LLVMGetTargetFromTriple, (const char*, LLVMTargetRef*, char**))                              \
  X(LLVMTargetMachineRef, LLVMCreateTargetMachine, (LLVMTargetRef, const char*, const char*, const char*,  \
                                                    int, int, int))                                        \
  X(void, LLVMDisposeTargetMachine, (LLVMTargetMachineRef))                                                \
  X(LLVMTargetDataRef, LLVMCreateTargetDataLayout, (LLVMTargetMachineRef))                                 \
  X(char*, LLVMCopyStringRepOfTargetData, (LLVMTargetDataRef))                                             \
  X(void, LLVMDisposeTargetData, (LLVMTargetDataRef))                                                      \
  X(LLVMPassBuilderOptionsRef, LLVMCreatePassBuilderOptions, ())                                           \
  X(void, LLVMDisposePassBuilderOptions, (LLVMPassBuilderOptionsRef))                                      \
  X(LLVMErrorRef, LLVMRunPasses, (LLVMModuleRef, const char*, LLVMTargetMachineRef,                        \
                                  LLVMPassBuilderOptionsRef))                                              \
  X(char*, LLVMGetErrorMessage, (LLVMErrorRef))                                                            \
  X(void, LLVMDisposeErrorMessage, (char*))                                                                \
  X(LLVMBool, LLVMTargetMachineEmitToMemoryBuffer, (LLVMTargetMachineRef, LLVMModuleRef, int, char**,      \
                                                    LLVMMemoryBufferRef*))                                 \
  X(const char*, LLVMGetBufferStart, (LLVMMemoryBufferRef))                                                \
  X(std::size_t, LLVMGetBufferSize, (LLVMMemoryBufferRef))

struct Api {
#define BRONZE_LLVM_MEMBER(ret, name, params) ret(*name) params = nullptr;
  BRONZE_LLVM_API(BRONZE_LLVM_MEMBER)
#undef BRONZE_LLVM_MEMBER
  unsigned major = 0;
};

// The loaded API, or nullptr; status() says which library loaded or why none.
const Api* api();
const std::string& status();
// The file of the library loaded ("" when none): what a helper process
// loads to build as this process would.
const std::string& library();
// The API, or NotSupportedError saying what `what` needs and how to get it.
const Api& require(const std::string& what);
// Registers one of the loaded LLVM's targets ("NVPTX": its info, target,
// machine code and printer), once; false when that build of LLVM lacks it.
bool initialize_target(const std::string& name);

// A context whose errors are collected, not printed (LLVM's default handler
// exits the process on an error).
class Context {
 public:
  explicit Context(const Api& a);
  ~Context();
  Context(const Context&) = delete;
  Context& operator=(const Context&) = delete;
  LLVMContextRef get() const { return ctx_; }
  // The errors reported since the last call, then cleared.
  std::string take_errors();

 private:
  static void on_diagnostic(LLVMDiagnosticInfoRef d, void* self);
  const Api& api_;
  LLVMContextRef ctx_;
  std::string errors_;
};

// A parsed module, disposed with its owner.
class Module {
 public:
  // Throws ValueError "<what>: <LLVM's message>" when LLVM rejects the bitcode.
  Module(Context& ctx, const std::uint8_t* bitcode, std::size_t size, const std::string& what);
  // From IR text bronze wrote (an Error with LLVM's message if it refuses it).
  Module(Context& ctx, const std::string& ir, const std::string& what);
  // Gives the module up (to LLVMLinkModules2, which consumes it).
  LLVMModuleRef release() {
    LLVMModuleRef m = m_;
    m_ = nullptr;
    return m;
  }
  ~Module();
  Module(const Module&) = delete;
  Module& operator=(const Module&) = delete;
  LLVMModuleRef get() const { return m_; }

 private:
  const Api& api_;
  LLVMModuleRef m_ = nullptr;
};

// A string LLVM allocated (LLVMDisposeMessage'd), as std::string.
std::string take_message(const Api& a, char* m);

// A function's type as LLVM prints it: its result's and each parameter's
// ("float", "<3 x i32>", "ptr addrspace(1)").
struct Signature {
  std::string result;
  std::vector<std::string> params;
};
Signature signature(const Api& a, LLVMValueRef function);

}  // namespace bronze::jit::llvm
