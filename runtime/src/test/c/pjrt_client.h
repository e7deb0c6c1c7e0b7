/* What the proxy test needs to be a PJRT framework: create a client, compile, run f32[4] programs
 * and read the result back. Struct layouts as in openxla/xla pjrt_c_api.h (0.94); larger caller
 * structs are accepted by newer plugins. */
#ifndef XLAC_PJRT_CLIENT_H
#define XLAC_PJRT_CLIENT_H

#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "pjrt_abi.h"

typedef struct xpjrt_device xpjrt_device;
typedef struct xpjrt_buffer xpjrt_buffer;
typedef struct xpjrt_event xpjrt_event;

typedef struct {
  size_t struct_size;
  void *extension_start;
  const void *create_options;
  size_t num_options;
  void *kv_get_callback, *kv_get_user_arg, *kv_put_callback, *kv_put_user_arg;
  xpjrt_client *client; /* out */
  void *kv_try_get_callback, *kv_try_get_user_arg;
} tc_client_create_args;

typedef struct {
  size_t struct_size;
  void *extension_start;
  xpjrt_client *client;
} tc_client_destroy_args;

typedef struct {
  size_t struct_size;
  void *extension_start;
  xpjrt_client *client;
  xpjrt_device *const *devices; /* out */
  size_t num_devices;           /* out */
} tc_devices_args;

typedef struct {
  size_t struct_size;
  void *extension_start;
  xpjrt_client *client;
  const void *data;
  int type; /* PJRT_Buffer_Type */
  const int64_t *dims;
  size_t num_dims;
  const int64_t *byte_strides;
  size_t num_byte_strides;
  int host_buffer_semantics;
  xpjrt_device *device;
  void *memory;
  void *device_layout;
  xpjrt_event *done_with_host_buffer; /* out */
  xpjrt_buffer *buffer;               /* out */
} tc_from_host_args;

typedef struct {
  size_t struct_size;
  void *extension_start;
  void *send_callbacks, *recv_callbacks;
  size_t num_send_ops, num_recv_ops;
  int launch_id;
  const int64_t *non_donatable_input_indices;
  size_t num_non_donatable_input_indices;
  void *context;
  const char *call_location;
  size_t num_tasks;
  int *task_ids;
  int64_t *incarnation_ids;
} tc_execute_options;

typedef struct {
  size_t struct_size;
  void *extension_start;
  xpjrt_loaded *executable;
  tc_execute_options *options;
  xpjrt_buffer *const *const *argument_lists;
  size_t num_devices;
  size_t num_args;
  xpjrt_buffer **const *output_lists;
  xpjrt_event **device_complete_events;
  xpjrt_device *execute_device;
} tc_execute_args;

typedef struct {
  size_t struct_size;
  void *extension_start;
  xpjrt_buffer *src;
  void *host_layout;
  void *dst;
  size_t dst_size;
  xpjrt_event *event; /* out */
} tc_to_host_args;

typedef struct {
  size_t struct_size;
  void *extension_start;
  void *object; /* the event or buffer */
} tc_object_args;

#define TC_F32 11
#define TC_SIZE(type) sizeof(type)

typedef xpjrt_error *(*tc_fn)(void *);

static const void *tc_api;

static tc_fn tc_slot(unsigned slot) {
  xpjrt_fn f = xp_slot(tc_api, slot);
  tc_fn g;
  memcpy(&g, &f, sizeof g);
  return g;
}

/* Prints and destroys an error; returns 1 when there was one. */
static int tc_failed(xpjrt_error *e, const char *what) {
  if (!e) return 0;
  xp_error_message_args m = {XP_SIZE(xp_error_message_args, message_size), NULL, e, NULL, 0};
  ((xp_error_message_fn)xp_slot(tc_api, XP_ERROR_MESSAGE))(&m);
  fprintf(stderr, "%s failed: %.*s\n", what, (int)m.message_size, m.message);
  xp_error_destroy_args d = {XP_SIZE(xp_error_destroy_args, error), NULL, e};
  ((xp_error_destroy_fn)xp_slot(tc_api, XP_ERROR_DESTROY))(&d);
  return 1;
}

static void tc_event_done(xpjrt_event *ev) {
  if (!ev) return;
  tc_object_args a = {TC_SIZE(tc_object_args), NULL, ev};
  tc_failed(tc_slot(XP_EVENT_AWAIT)(&a), "PJRT_Event_Await");
  tc_failed(tc_slot(XP_EVENT_DESTROY)(&a), "PJRT_Event_Destroy");
}

static xpjrt_client *tc_client_create(void) {
  xp_plugin_initialize_args init = {sizeof init, NULL};
  if (tc_failed(tc_slot(XP_PLUGIN_INITIALIZE)(&init), "PJRT_Plugin_Initialize")) return NULL;
  tc_client_create_args a;
  memset(&a, 0, sizeof a);
  a.struct_size = sizeof a;
  if (tc_failed(tc_slot(XP_CLIENT_CREATE)(&a), "PJRT_Client_Create")) return NULL;
  return a.client;
}

static void tc_client_destroy(xpjrt_client *c) {
  tc_client_destroy_args a = {sizeof a, NULL, c};
  tc_failed(tc_slot(XP_CLIENT_DESTROY)(&a), "PJRT_Client_Destroy");
}

/* A minimal CompileOptionsProto: executable_build_options {device_ordinal: -1, num_replicas: 1,
 * num_partitions: 1}. */
static const uint8_t TC_OPTIONS[] = {0x1a, 0x0f, 0x08, 0xff, 0xff, 0xff, 0xff, 0xff, 0xff,
                                     0xff, 0xff, 0xff, 0x01, 0x20, 0x01, 0x28, 0x01};

/* The MLIR text of f(x, y) = (x + y) * k for f32[4]. */
static void tc_program(int k, char *out, size_t size) {
  snprintf(out, size,
           "module @xlac_test_%d {\n"
           "  func.func public @main(%%x: tensor<4xf32>, %%y: tensor<4xf32>) -> tensor<4xf32> {\n"
           "    %%k = stablehlo.constant dense<%d.0> : tensor<4xf32>\n"
           "    %%s = stablehlo.add %%x, %%y : tensor<4xf32>\n"
           "    %%r = stablehlo.multiply %%s, %%k : tensor<4xf32>\n"
           "    return %%r : tensor<4xf32>\n"
           "  }\n"
           "}\n",
           k, k);
}

static xpjrt_loaded *tc_compile_with(xpjrt_client *c, const char *mlir, const uint8_t *options,
                                     size_t options_size) {
  xp_program p = {XP_SIZE(xp_program, format_size), NULL, (char *)mlir, strlen(mlir), "mlir", 4};
  xp_client_compile_args a = {XP_SIZE(xp_client_compile_args, executable), NULL, c, &p,
                              (const char *)options, options_size, NULL};
  if (tc_failed(tc_slot(XP_CLIENT_COMPILE)(&a), "PJRT_Client_Compile")) return NULL;
  return a.executable;
}

static xpjrt_loaded *tc_compile(xpjrt_client *c, int k) {
  char mlir[1024];
  tc_program(k, mlir, sizeof mlir);
  return tc_compile_with(c, mlir, TC_OPTIONS, sizeof TC_OPTIONS);
}

static void tc_loaded_destroy(xpjrt_loaded *l) {
  xp_loaded_destroy_args a = {XP_SIZE(xp_loaded_destroy_args, executable), NULL, l};
  tc_failed(tc_slot(XP_LOADED_DESTROY)(&a), "PJRT_LoadedExecutable_Destroy");
}

static xpjrt_buffer *tc_upload(xpjrt_client *c, xpjrt_device *d, const float v[4]) {
  static const int64_t dims[1] = {4};
  tc_from_host_args a;
  memset(&a, 0, sizeof a);
  a.struct_size = sizeof a;
  a.client = c;
  a.data = v;
  a.type = TC_F32;
  a.dims = dims;
  a.num_dims = 1;
  a.host_buffer_semantics = 0; /* immutable only during the call */
  a.device = d;
  if (tc_failed(tc_slot(XP_CLIENT_BUFFER_FROM_HOST)(&a), "PJRT_Client_BufferFromHostBuffer"))
    return NULL;
  tc_event_done(a.done_with_host_buffer);
  return a.buffer;
}

static void tc_buffer_destroy(xpjrt_buffer *b) {
  tc_object_args a = {TC_SIZE(tc_object_args), NULL, b};
  tc_failed(tc_slot(XP_BUFFER_DESTROY)(&a), "PJRT_Buffer_Destroy");
}

/* The struct_size tc_run gives its PJRT_ExecuteOptions; 0: the whole struct (112 bytes). A smaller
 * one is what a framework built against an older header sends (torch_xla 2.9: 80). */
static size_t tc_execute_options_size;

/* Runs f(x, y) on the first device and reads the f32[4] result; 0 on success. */
static int tc_run(xpjrt_client *c, xpjrt_loaded *l, const float x[4], const float y[4], float out[4]) {
  tc_devices_args d = {sizeof d, NULL, c, NULL, 0};
  if (tc_failed(tc_slot(XP_CLIENT_ADDRESSABLE_DEVICES)(&d), "PJRT_Client_AddressableDevices") ||
      d.num_devices < 1)
    return -1;
  xpjrt_buffer *args[2] = {tc_upload(c, d.devices[0], x), tc_upload(c, d.devices[0], y)};
  int rc = -1;
  if (args[0] && args[1]) {
    xpjrt_buffer *const *arg_lists[1] = {args};
    xpjrt_buffer *outputs[1] = {NULL};
    xpjrt_buffer **output_lists[1] = {outputs};
    xpjrt_event *done[1] = {NULL};
    tc_execute_options o;
    memset(&o, 0, sizeof o);
    o.struct_size = tc_execute_options_size ? tc_execute_options_size : sizeof o;
    tc_execute_args e;
    memset(&e, 0, sizeof e);
    e.struct_size = sizeof e;
    e.executable = l;
    e.options = &o;
    e.argument_lists = arg_lists;
    e.num_devices = 1;
    e.num_args = 2;
    e.output_lists = output_lists;
    e.device_complete_events = done;
    int failed = tc_failed(tc_slot(XP_LOADED_EXECUTE)(&e), "PJRT_LoadedExecute_Execute");
    if (e.options != &o) {
      fprintf(stderr, "PJRT_LoadedExecutable_Execute left another options pointer in the caller's Args\n");
      failed = 1;
    }
    if (!failed) {
      tc_event_done(done[0]);
      tc_to_host_args t;
      memset(&t, 0, sizeof t);
      t.struct_size = sizeof t;
      t.src = outputs[0];
      t.dst = out;
      t.dst_size = 4 * sizeof(float);
      if (!tc_failed(tc_slot(XP_BUFFER_TO_HOST)(&t), "PJRT_Buffer_ToHostBuffer")) {
        tc_event_done(t.event);
        rc = 0;
      }
      tc_buffer_destroy(outputs[0]);
    }
  }
  if (args[0]) tc_buffer_destroy(args[0]);
  if (args[1]) tc_buffer_destroy(args[1]);
  return rc;
}

/* Runs program k on fixed inputs and checks (x + y) * k; 0 when right. */
static int tc_check_program(xpjrt_client *c, xpjrt_loaded *l, int k) {
  const float x[4] = {1, 2, 3, 4}, y[4] = {10, 20, 30, 40};
  float out[4] = {0};
  if (tc_run(c, l, x, y, out) != 0) return -1;
  for (int i = 0; i < 4; i++)
    if (out[i] != (x[i] + y[i]) * (float)k) {
      fprintf(stderr, "program %d: element %d is %g, expected %g\n", k, i, out[i],
              (x[i] + y[i]) * (float)k);
      return -1;
    }
  return 0;
}

/* Serializes a loaded executable (malloc'd copy); NULL on failure. */
static uint8_t *tc_serialize(xpjrt_loaded *l, size_t *size) {
  xp_loaded_get_executable_args g = {XP_SIZE(xp_loaded_get_executable_args, executable), NULL, l, NULL};
  if (tc_failed(tc_slot(XP_LOADED_GET_EXECUTABLE)(&g), "PJRT_LoadedExecutable_GetExecutable"))
    return NULL;
  xp_executable_serialize_args s;
  memset(&s, 0, sizeof s);
  s.struct_size = XP_SIZE(xp_executable_serialize_args, serialized_executable_deleter);
  s.executable = g.executable;
  uint8_t *copy = NULL;
  if (!tc_failed(tc_slot(XP_EXECUTABLE_SERIALIZE)(&s), "PJRT_Executable_Serialize")) {
    copy = malloc(s.serialized_bytes_size ? s.serialized_bytes_size : 1);
    if (copy) memcpy(copy, s.serialized_bytes, s.serialized_bytes_size);
    *size = s.serialized_bytes_size;
    s.serialized_executable_deleter(s.serialized_executable);
  }
  xp_executable_destroy_args d = {XP_SIZE(xp_executable_destroy_args, executable), NULL, g.executable};
  tc_failed(tc_slot(XP_EXECUTABLE_DESTROY)(&d), "PJRT_Executable_Destroy");
  return copy;
}

static xpjrt_loaded *tc_deserialize(xpjrt_client *c, const uint8_t *bytes, size_t size) {
  xp_deserialize_and_load_args a;
  memset(&a, 0, sizeof a);
  a.struct_size = sizeof a; /* with the override fields: newer plugins require them */
  a.client = c;
  a.serialized_executable = (const char *)bytes;
  a.serialized_executable_size = size;
  if (tc_failed(tc_slot(XP_EXECUTABLE_DESERIALIZE_AND_LOAD)(&a), "PJRT_Executable_DeserializeAndLoad"))
    return NULL;
  return a.loaded_executable;
}

#endif
