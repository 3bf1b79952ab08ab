// Megatron-LM / NeMo arguments and DeepSpeed configs as scenarios: each argument mapped,
// noted as not affecting an iteration, or an error naming it.
#include "scenarios/framework_import.hpp"

#include <gtest/gtest.h>

#include <google/protobuf/text_format.h>

#include <string>
#include <variant>
#include <vector>

#include "scenarios/loader.hpp"

namespace trainsim::scenarios {
namespace {

Scenario cluster(const char* model, int nodes) {
  Scenario s;
  s.mutable_model()->set_preset(model);
  s.mutable_cluster()->set_preset("dgx-h100");
  s.mutable_cluster()->set_nodes(nodes);
  return s;
}

std::string text_of(const Scenario& s) {
  std::string t;
  google::protobuf::TextFormat::PrintToString(s, &t);
  return t;
}

TEST(ImportMegatron, MapsTheLayoutStrategiesAndShape) {
  const auto r = import_megatron(
      {"--tensor-model-parallel-size", "8", "--pipeline-model-parallel-size", "4",
       "--num-layers-per-virtual-pipeline-stage", "5", "--num-layers", "80", "--sequence-parallel",
       "--micro-batch-size=1", "--global-batch-size", "1024", "--seq-length", "8192", "--bf16",
       "--use-distributed-optimizer", "--overlap-grad-reduce", "--overlap-param-gather", "--tp-comm-overlap",
       "--recompute-granularity", "selective", "--use-flash-attn", "--lr", "3e-4", "--train-iters", "100"},
      cluster("llama3-70b", 64));
  EXPECT_TRUE(r.errors.empty()) << r.errors.front();
  const Scenario& s = r.scenario;
  EXPECT_EQ(s.parallel().tensor(), 8);
  EXPECT_EQ(s.parallel().pipeline(), 4);
  EXPECT_EQ(s.parallel().virtual_stages(), 4);  // 80 layers / (4 stages × 5 layers)
  EXPECT_EQ(s.strategy().pipeline_schedule(), "interleaved-1f1b");
  EXPECT_TRUE(s.parallel().sequence_parallel());
  EXPECT_EQ(s.training().precision(), BF16);
  EXPECT_EQ(s.strategy().zero_stage(), 1);
  EXPECT_TRUE(s.strategy().overlap_tp_comm());
  EXPECT_EQ(s.strategy().recompute(), "selective");
  EXPECT_EQ(r.notes.size(), 2u);  // --lr, --train-iters
  // What it writes loads as a scenario.
  auto loaded = load_text(text_of(s), "i.textproto");
  ASSERT_TRUE(std::holds_alternative<LoadedScenario>(loaded))
      << std::get<std::vector<Diagnostic>>(loaded).front().str();
  EXPECT_EQ(std::get<LoadedScenario>(loaded).training.layout.data, 16);
}

// Megatron-LM's two gradient-dtype flags: --grad-reduce-in-bf16 wins over
// --accumulate-allreduce-grads-in-fp32 in either order, as arguments.py applies it after;
// without either the field stays unset (the loader's default is Megatron's).
TEST(ImportMegatron, GradientDtypeFlags) {
  const auto base = cluster("gpt3-175b", 1);
  const auto fp16_fp32 = import_megatron({"--fp16", "--accumulate-allreduce-grads-in-fp32"}, base);
  EXPECT_TRUE(fp16_fp32.errors.empty()) << fp16_fp32.errors.front();
  ASSERT_TRUE(fp16_fp32.scenario.training().has_accumulate_allreduce_grads_in_fp32());
  EXPECT_TRUE(fp16_fp32.scenario.training().accumulate_allreduce_grads_in_fp32());
  const std::string fp32 = "--accumulate-allreduce-grads-in-fp32", bf16 = "--grad-reduce-in-bf16";
  using Args = std::vector<std::string>;
  for (const Args& args : {Args{"--bf16", bf16, fp32}, Args{fp32, "--bf16", bf16}}) {
    const auto r = import_megatron(args, base);
    EXPECT_TRUE(r.errors.empty()) << r.errors.front();
    ASSERT_TRUE(r.scenario.training().has_accumulate_allreduce_grads_in_fp32());
    EXPECT_FALSE(r.scenario.training().accumulate_allreduce_grads_in_fp32());
  }
  EXPECT_FALSE(import_megatron({"--bf16"}, base).scenario.training().has_accumulate_allreduce_grads_in_fp32());
}

TEST(ImportMegatron, NemoOverridesMapToTheSameFields) {
  const auto r = import_megatron({"model.tensor_model_parallel_size=4", "model.micro_batch_size=2",
                                  "trainer.num_nodes=8", "trainer.precision=bf16-mixed"},
                                 cluster("gpt3-175b", 1));
  EXPECT_TRUE(r.errors.empty());
  EXPECT_EQ(r.scenario.parallel().tensor(), 4);
  EXPECT_EQ(r.scenario.training().micro_batch_size(), 2);
  EXPECT_EQ(r.scenario.cluster().nodes(), 8);
  EXPECT_EQ(r.scenario.training().precision(), BF16);
}

// NeMo's architecture keys, with their own spellings of the values, name the family as
// Megatron-LM's flags do; a value with no family is an error naming what is valid.
TEST(ImportMegatron, NemoArchitectureKeysNameTheFamily) {
  const auto r = import_megatron({"model.activation=fast-swiglu", "model.normalization=rmsnorm",
                                  "model.position_embedding_type=rope",
                                  "model.share_embeddings_and_output_weights=False",
                                  "model.bias=False", "model.make_vocab_size_divisible_by=128",
                                  "model.tensor_model_parallel_size=2"},
                                 cluster("llama3-8b", 1));
  EXPECT_TRUE(r.errors.empty()) << r.errors.front();
  EXPECT_EQ(r.scenario.model().family(), LLAMA);
  ASSERT_EQ(r.notes.size(), 1u);  // a bias-free LLAMA: only that there is no --vocab-size to pad
  EXPECT_NE(r.notes[0].find("pads --vocab-size, which is not given"), std::string::npos) << r.notes[0];
  const auto gpt = import_megatron({"model.activation=gelu", "model.normalization=layernorm", "model.bias=True",
                                    "model.share_embeddings_and_output_weights=True"},
                                   cluster("llama3-8b", 1));
  EXPECT_TRUE(gpt.errors.empty()) << gpt.errors.front();
  EXPECT_EQ(gpt.scenario.model().family(), GPT);
  const auto bad = import_megatron({"model.activation=squared-relu", "model.normalization=scalenorm",
                                    "model.bias=maybe", "model.activation=fast-swiglu"},
                                   cluster("llama3-8b", 1));
  ASSERT_EQ(bad.errors.size(), 4u);
  EXPECT_EQ(bad.errors[0], "model.activation=squared-relu: expected gelu (GPT), swiglu or fast-swiglu (LLAMA), got "
                           "\"squared-relu\"");
  EXPECT_EQ(bad.errors[1], "model.normalization=scalenorm: expected layernorm or layernorm1p (GPT) or rmsnorm "
                           "(LLAMA), got \"scalenorm\"");
  EXPECT_EQ(bad.errors[2], "model.bias=maybe: expected True or False, got \"maybe\"");
  EXPECT_EQ(bad.errors[3].rfind("model.activation=fast-swiglu: no model family trainsim builds has this", 0), 0u)
      << bad.errors[3];
}

// A NeMo launcher's overrides for a Llama-2 70B pretraining run: the optimizer's name gives
// ZeRO-1, its sync options and userbuffers the overlaps (False turns one off), null keeps
// Megatron-LM's default, and what changes no iteration's time is noted, one note each.
TEST(ImportMegatron, NemoLauncherOverridesMapOrAreNoted) {
  const std::vector<std::string> args = {
      "trainer.num_nodes=16", "trainer.devices=8", "trainer.precision=bf16", "trainer.max_steps=300000",
      "model.mcore_gpt=True", "model.transformer_engine=True", "model.megatron_amp_O2=True",
      "model.micro_batch_size=1", "model.global_batch_size=512", "model.encoder_seq_length=4096",
      "model.tensor_model_parallel_size=4", "model.pipeline_model_parallel_size=4",
      "model.virtual_pipeline_model_parallel_size=null", "model.sequence_parallel=True",
      "model.activations_checkpoint_granularity=null", "model.activations_checkpoint_method=null",
      "model.use_flash_attention=True", "model.ub_tp_comm_overlap=True", "model.gradient_accumulation_fusion=True",
      "model.fp8=False", "model.optim.name=distributed_fused_adam", "model.optim.overlap_grad_sync=True",
      "model.optim.overlap_param_sync=False", "model.optim.grad_sync_dtype=bf16", "model.optim.bucket_cap_mb=125",
      "model.optim.lr=1e-4", "model.optim.sched.warmup_steps=500", "model.data.data_prefix=[1.0,/data/x]",
      "exp_manager.create_checkpoint_callback=True"};
  const auto r = import_megatron(args, cluster("llama2-70b", 1));
  EXPECT_TRUE(r.errors.empty()) << r.errors.front();
  const Scenario& s = r.scenario;
  EXPECT_EQ(s.cluster().nodes(), 16);
  EXPECT_EQ(s.parallel().tensor(), 4);
  EXPECT_EQ(s.parallel().pipeline(), 4);
  EXPECT_FALSE(s.parallel().has_virtual_stages());
  EXPECT_EQ(s.strategy().zero_stage(), 1);
  EXPECT_EQ(s.training().optimizer(), ADAM);
  EXPECT_TRUE(s.strategy().overlap_grad_reduce());
  EXPECT_FALSE(s.strategy().overlap_param_gather());
  EXPECT_TRUE(s.strategy().overlap_tp_comm());
  EXPECT_EQ(s.strategy().recompute(), "");
  EXPECT_EQ(s.training().attention(), FLASH);
  EXPECT_EQ(s.training().precision(), BF16);
  ASSERT_TRUE(s.training().has_accumulate_allreduce_grads_in_fp32());
  EXPECT_FALSE(s.training().accumulate_allreduce_grads_in_fp32());
  // The keys that stand for no argument first, then the arguments' own notes.
  const std::vector<std::string> noted = {"trainer.max_steps=300000", "model.megatron_amp_O2=True",
                                          "model.virtual_pipeline_model_parallel_size=null",
                                          "model.activations_checkpoint_granularity=null",
                                          "model.activations_checkpoint_method=null",
                                          "model.gradient_accumulation_fusion=True", "model.fp8=False",
                                          "model.optim.bucket_cap_mb=125", "model.optim.lr=1e-4",
                                          "model.optim.sched.warmup_steps=500",
                                          "model.data.data_prefix=[1.0,/data/x]",
                                          "exp_manager.create_checkpoint_callback=True", "model.mcore_gpt=True",
                                          "model.transformer_engine=True"};
  ASSERT_EQ(r.notes.size(), noted.size());
  for (std::size_t i = 0; i < noted.size(); ++i)
    EXPECT_EQ(r.notes[i].rfind(noted[i] + ": ", 0), 0u) << i << ": " << r.notes[i];
  EXPECT_EQ(r.notes[1], "model.megatron_amp_O2=True: fp32 main parameters and gradients beside the 16-bit weights, "
                        "as trainsim models mixed precision");
  // What it writes loads and runs as a scenario.
  auto loaded = load_text(text_of(s), "i.textproto");
  ASSERT_TRUE(std::holds_alternative<LoadedScenario>(loaded))
      << std::get<std::vector<Diagnostic>>(loaded).front().str();
  EXPECT_EQ(std::get<LoadedScenario>(loaded).training.layout.data, 8);

  // Unfused weight-gradient accumulation, as --no-gradient-accumulation-fusion says it.
  for (const char* unfused : {"model.gradient_accumulation_fusion=False", "--no-gradient-accumulation-fusion"}) {
    const auto u = import_megatron({unfused}, cluster("llama2-70b", 1));
    EXPECT_TRUE(u.errors.empty()) << u.errors.front();
    ASSERT_TRUE(u.scenario.training().has_gradient_accumulation_fusion()) << unfused;
    EXPECT_FALSE(u.scenario.training().gradient_accumulation_fusion()) << unfused;
  }

  const auto bad = import_megatron({"model.megatron_amp_O2=False", "model.optim.name=lamb",
                                    "model.transformer_engine=False",
                                    "model.use_flash_attention=False", "model.fp8=maybe",
                                    "model.optim.grad_sync_dtype=fp16", "model.mcore_gpt=False"},
                                   cluster("llama2-70b", 1));
  ASSERT_EQ(bad.errors.size(), 7u);
  EXPECT_EQ(bad.errors[0], "model.megatron_amp_O2=False: only True maps: without O2 the weights stay in fp32 under "
                           "autocast, a memory and time trainsim does not model");
  EXPECT_EQ(bad.errors[1], "model.optim.name=lamb: expected distributed_fused_adam (ZeRO-1), fused_adam, adam, "
                           "adamw or sgd, got \"lamb\"");
  EXPECT_EQ(bad.errors[2], "model.fp8=maybe: expected True or False, got \"maybe\"");
  EXPECT_EQ(bad.errors[3], "model.optim.grad_sync_dtype=fp16: expected bf16 or fp32, got \"fp16\"");
  // The rest are the Megatron-LM arguments' own errors, after the keys that stand for none.
  EXPECT_EQ(bad.errors[4].rfind("model.transformer_engine=False: only transformer_engine maps", 0), 0u)
      << bad.errors[4];
  EXPECT_EQ(bad.errors[5], "model.use_flash_attention=False: only true maps (the fused attention kernel); for "
                           "unfused attention set training.attention: UNFUSED in the scenario");
  EXPECT_EQ(bad.errors[6], "model.mcore_gpt=False: only Megatron-Core's models map (trainsim models their layers)");
}

// The recompute arguments are read together, in any order: --recompute-num-layers counts a
// full recompute's layers (1: full, more: every-k) and is ignored, with a note, otherwise.
TEST(ImportMegatron, RecomputeArgumentsInAnyOrder) {
  const auto base = cluster("gpt3-175b", 1);
  using Args = std::vector<std::string>;
  for (const Args& args : {Args{"--recompute-granularity", "full", "--recompute-method", "uniform",
                                "--recompute-num-layers", "4"},
                           Args{"model.activations_checkpoint_num_layers=4",
                                "model.activations_checkpoint_method=uniform",
                                "model.activations_checkpoint_granularity=full"}}) {
    const auto r = import_megatron(args, base);
    EXPECT_TRUE(r.errors.empty()) << r.errors.front();
    EXPECT_TRUE(r.notes.empty()) << r.notes.front();
    EXPECT_EQ(r.scenario.strategy().recompute(), "every-k");
    EXPECT_EQ(r.scenario.strategy().recompute_every_k().k(), 4);
  }
  const auto one = import_megatron({"--recompute-num-layers", "1", "--recompute-granularity", "full"}, base);
  EXPECT_EQ(one.scenario.strategy().recompute(), "full");
  const auto selective = import_megatron({"--recompute-num-layers", "2", "--recompute-activations"}, base);
  EXPECT_EQ(selective.scenario.strategy().recompute(), "selective");
  ASSERT_EQ(selective.notes.size(), 1u);
  EXPECT_EQ(selective.notes[0], "--recompute-num-layers 2: counts the layers of a full recompute's segments, and the "
                                "granularity is not full; ignored, as Megatron-LM ignores it");
  const auto off = import_megatron({"--recompute-activations", "false"}, base);
  EXPECT_EQ(off.scenario.strategy().recompute(), "none");
}

// Variants whose kernels trainsim prices alike are noted, not refused: LayerNorm with its
// weights stored as γ − 1 (NeMo's layernorm1p), a QKV bias (GPT has it already; LLAMA leaves
// out an epilogue add), the unfused softmax in fp32 when attention is fused. The same on the
// wrong family or path is an error.
TEST(ImportMegatron, VariantsPricedAlikeAreNoted) {
  const auto gpt = import_megatron({"model.normalization=layernorm1p", "--add-qkv-bias", "--attention-softmax-in-fp32"},
                                   cluster("gpt3-175b", 1));
  EXPECT_TRUE(gpt.errors.empty()) << gpt.errors.front();
  EXPECT_EQ(gpt.scenario.model().family(), GPT);
  ASSERT_EQ(gpt.notes.size(), 3u);
  EXPECT_EQ(gpt.notes[0], "--add-qkv-bias: trainsim's GPT family adds every linear layer's bias already");
  EXPECT_EQ(gpt.notes[1], "model.normalization=layernorm1p: LayerNorm with its weights stored as γ − 1, the same "
                          "kernels (adding the 1 is one pass over h weights)");
  EXPECT_EQ(gpt.notes[2], "--attention-softmax-in-fp32: the unfused attention's softmax; with fused attention "
                          "(FLASH) it changes nothing");
  Scenario unfused = cluster("llama3-8b", 1);
  unfused.mutable_training()->set_attention(UNFUSED);
  const auto llama = import_megatron({"--swiglu", "--normalization", "RMSNorm", "--position-embedding-type", "rope",
                                      "--untie-embeddings-and-output-weights", "--disable-bias-linear",
                                      "--add-qkv-bias", "--apply-layernorm-1p", "--attention-softmax-in-fp32"},
                                     unfused);
  ASSERT_EQ(llama.errors.size(), 2u);
  EXPECT_EQ(llama.errors[0], "--apply-layernorm-1p: a LayerNorm variant; trainsim's LLAMA family normalizes with "
                             "RMSNorm");
  EXPECT_EQ(llama.errors[1], "--attention-softmax-in-fp32: the unfused softmax in fp32 is not modelled (trainsim "
                             "prices it in the 16-bit dtype)");
  ASSERT_EQ(llama.notes.size(), 1u);
  EXPECT_EQ(llama.notes[0].rfind("--add-qkv-bias: the QKV projection adds a bias, which trainsim's LLAMA family "
                                 "leaves out",
                                 0),
            0u)
      << llama.notes[0];
}

TEST(ImportMegatron, EveryArgumentItCannotMapIsAnError) {
  const auto r = import_megatron({"--qk-layernorm", "--tensor-model-parallel-size", "x", "--recompute-method", "block",
                                  "model.moe_router=topk", "stray", "--num-experts", "8"},
                                 cluster("gpt3-175b", 1));
  ASSERT_EQ(r.errors.size(), 6u);
  EXPECT_EQ(r.errors[0], "model.moe_router=topk: no scenario field for the NeMo key model.moe_router");
  EXPECT_EQ(r.errors[1], "stray: not an argument (expected --name [value] or a NeMo key=value)");
  EXPECT_EQ(r.errors[2], "--qk-layernorm: no scenario field maps --qk-layernorm");
  EXPECT_EQ(r.errors[3], "--tensor-model-parallel-size: expected a positive integer, got \"x\"");
  EXPECT_NE(r.errors[4].find("only the uniform method maps"), std::string::npos);
  EXPECT_EQ(r.errors[5], "--num-experts: no scenario field maps --num-experts");
}

// A Llama model as Megatron-LM's own Llama scripts describe it, without a preset: the four
// architecture flags name the LLAMA family, and --vocab-size is padded as Megatron pads it
// (to a multiple of 128 × the tensor size).
TEST(ImportMegatron, LlamaArchitectureFlagsNameTheFamily) {
  Scenario base;
  base.mutable_cluster()->set_preset("dgx-h100");
  base.mutable_cluster()->set_nodes(2);
  const auto r = import_megatron(
      {"--num-layers", "32", "--hidden-size", "4096", "--ffn-hidden-size", "14336", "--num-attention-heads", "32",
       "--group-query-attention", "--num-query-groups", "8", "--seq-length", "8192", "--max-position-embeddings",
       "8192", "--swiglu", "--normalization", "RMSNorm", "--position-embedding-type", "rope",
       "--untie-embeddings-and-output-weights", "--disable-bias-linear", "--vocab-size", "128256",
       "--tensor-model-parallel-size", "4", "--micro-batch-size", "1", "--global-batch-size", "64", "--bf16",
       "--rotary-base", "500000", "--mock-data", "--distributed-timeout-minutes", "60", "--kv-channels", "128"},
      base);
  EXPECT_TRUE(r.errors.empty()) << r.errors.front();
  EXPECT_EQ(r.scenario.model().family(), LLAMA);
  EXPECT_EQ(r.scenario.model().vocab_size(), 128512);  // 128256 up to a multiple of 128 × 4
  ASSERT_EQ(r.notes.size(), 4u);  // --rotary-base, --mock-data, --distributed-timeout-minutes, then the padding
  EXPECT_EQ(r.notes[3],
            "--vocab-size 128256: padded to 128512, a multiple of 512 (128 × tensor 4), as Megatron-LM pads it");
  auto loaded = load_text(text_of(r.scenario), "i.textproto");
  ASSERT_TRUE(std::holds_alternative<LoadedScenario>(loaded))
      << std::get<std::vector<Diagnostic>>(loaded).front().str();
  const auto& model = std::get<LoadedScenario>(loaded).training.model;
  EXPECT_EQ(model.family, models::Family::LLAMA);
  EXPECT_FALSE(model.tied_embedding);
  EXPECT_EQ(model.max_positions, 0);  // rotary: no learned table
  EXPECT_EQ(model.vocab, 128512);

  // Megatron-LM's older spelling of rotary positions, and a tensor size given after the
  // vocabulary (the padding reads the final one); without --disable-bias-linear a note says
  // that the run's biases are left out.
  const auto older = import_megatron({"--vocab-size=50257", "--swiglu", "--normalization=RMSNorm",
                                      "--use-rotary-position-embeddings", "--untie-embeddings-and-output-weights",
                                      "--tensor-model-parallel-size", "8"},
                                     cluster("llama3-8b", 1));
  EXPECT_TRUE(older.errors.empty()) << older.errors.front();
  EXPECT_EQ(older.scenario.model().family(), LLAMA);
  EXPECT_EQ(older.scenario.model().vocab_size(), 51200);  // a multiple of 1024
  ASSERT_EQ(older.notes.size(), 2u);
  EXPECT_NE(older.notes[0].find("without --disable-bias-linear"), std::string::npos) << older.notes[0];

  // The GPT defaults written out name the GPT family; a Llama preset keeps its own family
  // when no architecture flag is given, and --disable-bias-linear then needs none.
  const auto gpt = import_megatron({"--normalization", "LayerNorm", "--position-embedding-type", "learned_absolute"},
                                   cluster("llama3-8b", 1));
  EXPECT_TRUE(gpt.errors.empty()) << gpt.errors.front();
  EXPECT_EQ(gpt.scenario.model().family(), GPT);
  const auto preset = import_megatron({"--disable-bias-linear"}, cluster("llama3-8b", 1));
  EXPECT_TRUE(preset.errors.empty()) << preset.errors.front();
  EXPECT_EQ(preset.scenario.model().family(), FAMILY_UNSPECIFIED);
  EXPECT_TRUE(preset.notes.empty());
}

// Flags that mix the families, or that no family has, are errors naming them and what each
// family is; so are values Megatron-LM would refuse or trainsim has no family for.
TEST(ImportMegatron, ArchitectureNoFamilyHasIsAnError) {
  const auto mixed = import_megatron({"--swiglu", "--num-layers", "4"}, cluster("gpt3-175b", 1));
  ASSERT_EQ(mixed.errors.size(), 1u);
  EXPECT_EQ(mixed.errors[0].rfind("--swiglu: no model family trainsim builds has this architecture: GPT is", 0), 0u)
      << mixed.errors[0];
  EXPECT_NE(mixed.errors[0].find("LLAMA is --swiglu --normalization RMSNorm --position-embedding-type rope "
                                 "--untie-embeddings-and-output-weights"),
            std::string::npos);
  const auto no_positions =
      import_megatron({"--swiglu", "--normalization", "RMSNorm", "--no-position-embedding",
                       "--untie-embeddings-and-output-weights"},
                      cluster("gpt3-175b", 1));
  ASSERT_EQ(no_positions.errors.size(), 1u);
  EXPECT_EQ(no_positions.errors[0].rfind("--swiglu --normalization RMSNorm --no-position-embedding "
                                         "--untie-embeddings-and-output-weights: no model family",
                                         0),
            0u)
      << no_positions.errors[0];
  const auto values = import_megatron({"--normalization", "BatchNorm", "--position-embedding-type", "alibi"},
                                      cluster("gpt3-175b", 1));
  ASSERT_EQ(values.errors.size(), 2u);
  EXPECT_EQ(values.errors[0], "--normalization: expected LayerNorm or RMSNorm, got \"BatchNorm\"");
  EXPECT_EQ(values.errors[1],
            "--position-embedding-type: expected learned_absolute (GPT) or rope (LLAMA), got \"alibi\"");
  const auto gpt_without_bias = import_megatron({"--disable-bias-linear"}, cluster("gpt3-175b", 1));
  ASSERT_EQ(gpt_without_bias.errors.size(), 1u);
  EXPECT_EQ(gpt_without_bias.errors[0].rfind("--disable-bias-linear: trainsim's GPT family has linear biases", 0), 0u);
  const auto head_size = import_megatron({"--hidden-size", "4096", "--num-attention-heads", "32", "--kv-channels",
                                          "256", "--transformer-impl", "local", "--use-mcore-models"},
                                         cluster("gpt3-175b", 1));
  ASSERT_EQ(head_size.errors.size(), 2u);
  EXPECT_EQ(head_size.errors[0], "--transformer-impl: only transformer_engine maps (trainsim models Transformer "
                                 "Engine's layers and their overlaps), got \"local\"");
  EXPECT_EQ(head_size.errors[1].rfind("--kv-channels 256: trainsim's heads are hidden / heads wide (hidden 4096, "
                                      "32 heads)",
                                      0),
            0u)
      << head_size.errors[1];
  ASSERT_EQ(head_size.notes.size(), 1u);  // --use-mcore-models
  // The shape may be the preset's: Llama-3 70B's heads are 8192 / 64 = 128 wide, not 96.
  EXPECT_TRUE(import_megatron({"--kv-channels", "128"}, cluster("llama3-70b", 1)).errors.empty());
  EXPECT_EQ(import_megatron({"--kv-channels", "96"}, cluster("llama3-70b", 1)).errors.size(), 1u);
  Scenario hf;
  hf.mutable_model()->set_hf_config("config.json");
  const auto unchecked = import_megatron({"--kv-channels", "128"}, hf);
  EXPECT_TRUE(unchecked.errors.empty());
  ASSERT_EQ(unchecked.notes.size(), 1u);
  EXPECT_EQ(unchecked.notes[0].rfind("--kv-channels 128: not checked here", 0), 0u) << unchecked.notes[0];
  const auto both_vocabularies =
      import_megatron({"--vocab-size", "50257", "--padded-vocab-size", "50304"}, cluster("gpt3-175b", 1));
  ASSERT_EQ(both_vocabularies.errors.size(), 1u);
  EXPECT_NE(both_vocabularies.errors[0].find("give one"), std::string::npos);
  const auto multiple_alone = import_megatron({"--make-vocab-size-divisible-by", "64"}, cluster("gpt3-175b", 1));
  EXPECT_TRUE(multiple_alone.errors.empty());
  ASSERT_EQ(multiple_alone.notes.size(), 1u);
  EXPECT_NE(multiple_alone.notes[0].find("pads --vocab-size, which is not given"), std::string::npos);
}

TEST(ImportDeepSpeed, MapsBatchesZeroPrecisionAndOptimizer) {
  const auto r = import_deepspeed(R"({"train_batch_size": 512, "train_micro_batch_size_per_gpu": 2,
      "bf16": {"enabled": true}, "zero_optimization": {"stage": 1, "overlap_comm": true},
      "optimizer": {"type": "AdamW", "params": {"lr": 1e-4}}, "steps_per_print": 10})",
                                  cluster("gpt-1.7b", 4));
  EXPECT_TRUE(r.errors.empty()) << r.errors.front();
  EXPECT_EQ(r.scenario.training().global_batch_size(), 512);
  EXPECT_EQ(r.scenario.training().micro_batch_size(), 2);
  EXPECT_EQ(r.scenario.training().precision(), BF16);
  EXPECT_EQ(r.scenario.strategy().zero_stage(), 1);
  EXPECT_TRUE(r.scenario.strategy().overlap_grad_reduce());
  EXPECT_EQ(r.scenario.training().optimizer(), ADAM);
}

// A config as DeepSpeed's examples write it: the defaults of the sharded optimizer's
// communication spelled out, monitoring and scaling keys, and a disabled profiler map or
// are noted.
TEST(ImportDeepSpeed, DefaultsAndMonitoringAreNoted) {
  const auto r = import_deepspeed(R"({"train_batch_size": 512, "zero_optimization": {"stage": 1,
      "reduce_scatter": true, "allgather_partitions": true}, "tensorboard": {"enabled": true},
      "wandb": {"enabled": false}, "flops_profiler": {"enabled": false}, "zero_allow_untested_optimizer": true,
      "prescale_gradients": false})",
                                  cluster("gpt-1.7b", 4));
  EXPECT_TRUE(r.errors.empty()) << r.errors.front();
  EXPECT_EQ(r.notes.size(), 7u);
  EXPECT_EQ(r.notes[0], "flops_profiler: does not change an iteration's time; ignored");
  const auto refused = import_deepspeed(R"({"zero_optimization": {"reduce_scatter": false},
      "flops_profiler": {"enabled": true, "profile_step": 1}})",
                                        cluster("gpt-1.7b", 4));
  ASSERT_EQ(refused.errors.size(), 2u);
  EXPECT_EQ(refused.errors[0].rfind("flops_profiler: enabled, it profiles one step", 0), 0u) << refused.errors[0];
  EXPECT_EQ(refused.errors[1], "zero_optimization.reduce_scatter: only true maps (reduce-scatter the gradients, "
                               "all-gather the partitions); got false");
}

TEST(ImportDeepSpeed, EveryKeyItCannotMapIsAnError) {
  const auto r = import_deepspeed(R"({"zero_optimization": {"stage": 5, "offload_optimizer": {"device": "cpu"}},
      "train_batch_size": -1, "comms_logger": {}})",
                                  cluster("gpt-1.7b", 4));
  ASSERT_EQ(r.errors.size(), 4u);
  EXPECT_EQ(r.errors[0], "comms_logger: no scenario field maps it");
  EXPECT_EQ(r.errors[1], "train_batch_size: expected a positive integer, got -1");
  EXPECT_EQ(r.errors[2], "zero_optimization.offload_optimizer: no scenario field maps it");
  EXPECT_EQ(r.errors[3], "zero_optimization.stage: expected 0..3, got 5");
  EXPECT_EQ(import_deepspeed("{", cluster("gpt-1.7b", 4)).errors.size(), 1u);
}

}  // namespace
}  // namespace trainsim::scenarios
