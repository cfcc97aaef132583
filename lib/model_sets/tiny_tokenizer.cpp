// Training of the tiny tokenizer (see tiny_tokenizer.h): SentencePiece's trainer over the corpus
// below, one sentence per line, in memory.
#include "model_sets/tiny_tokenizer.h"

#include <sentencepiece_trainer.h>

#include <string_view>
#include <unordered_map>

#include "core/error.h"

// Exported by libsentencepiece but absent from its public headers; it silences the trainer's
// progress log.
namespace sentencepiece::logging {
void SetMinLogLevel(int v);
}

namespace ltx2::model_sets {

namespace {

// Plain sentences in the style of video prompts, so that typical prompts split into few pieces.
constexpr std::string_view kCorpus = R"(A cat sits on a wooden table and looks out of the window.
The small dog runs across the green field in the morning light.
A woman walks along the beach at sunset while the waves roll in.
Two children play with a red ball in the park near the old tree.
The camera slowly moves forward through a quiet forest full of tall trees.
A man in a blue coat opens the door and steps into the warm kitchen.
Rain falls on the city street and the lights reflect in the water.
A bird flies over the lake and lands on a branch by the shore.
The sun rises behind the mountains and the sky turns orange and pink.
A close up of a cup of coffee with steam rising from the top.
The girl smiles at the camera and waves her hand slowly.
A car drives down an empty road between fields of yellow flowers.
The old man reads a book by the fire in a small wooden house.
Snow covers the roofs of the village and smoke rises from the chimneys.
A group of friends laugh together around a table in a busy cafe.
The cat jumps from the chair to the floor and walks to its bowl.
Waves crash against the rocks and white foam sprays into the air.
A train moves through the countryside under a bright blue sky.
The woman turns her head and looks at the ocean with a calm face.
A boat sails across the calm water as the moon shines above it.
The dog chases a yellow ball and brings it back to the boy.
Leaves fall from the trees and drift slowly to the ground in autumn.
A chef cuts fresh vegetables on a board in a bright kitchen.
The camera pans across a crowded market with colorful fruit and bread.
A horse runs through the tall grass with its mane blowing in the wind.
The little girl holds a balloon and walks down the street with her mother.
Clouds move quickly over the hills as the light changes from gold to grey.
A musician plays a guitar on a stage under soft blue lights.
The cat sleeps in the sun on a soft cushion by the window.
A man rides a bicycle along a river path in the early evening.
Fish swim between bright coral in the clear water of the sea.
The city at night is full of lights, cars and people walking home.
A young woman reads a letter and begins to smile.
Birds sing in the trees as the first light of day reaches the garden.
The waves of the sea move slowly under a sky full of stars.
A black cat and a white dog sit side by side on the steps.
The children run into the water and splash each other, laughing.
A candle burns on the table and its light moves on the walls.
The wind moves through the field and the grass bends like water.
An old bridge crosses the river and a boat passes under it.
She opens the window and the morning air fills the quiet room.
He walks into the forest with a small lamp in his hand.
The mountain lake is still and the trees are mirrored in it.
A red kite flies high above the beach on a windy afternoon.
In the garden, the flowers open as the sun warms the earth.
The camera follows the cat as it walks along the top of the wall.
A dancer moves across the stage in a long white dress.
The road winds through the hills toward a town by the sea.
Three ducks swim across the pond and the water ripples behind them.
A baby laughs as the puppy licks its small hands.
Lightning flashes over the dark city and rain begins to fall.
The old clock on the wall shows ten minutes past seven.
A farmer walks through his field of wheat in the golden evening light.
The ship leaves the harbor and the people on the shore wave goodbye.
A woman paints a picture of the sea on a large white canvas.
The fox looks around and then runs into the snowy woods.
A plate of warm bread and fresh fruit sits on the kitchen table.
The students sit in the classroom and listen to their teacher.
A slow motion shot of water drops falling into a glass.
The sky is clear, the air is cold, and the stars are bright tonight.
We see a wide view of the valley with a river running through it.
The man and the woman dance together in the middle of the room.
A cat with green eyes watches a bird through the glass.
The morning fog lifts from the lake as the sun climbs higher.
They walk hand in hand along the path under the cherry trees.
A bright yellow sun sets over the ocean, painting the water red.
)";

class CorpusLines : public sentencepiece::SentenceIterator {
 public:
  bool done() const override { return pos_ >= kCorpus.size(); }
  void Next() override {
    size_t end = kCorpus.find('\n', pos_);
    pos_ = end == std::string_view::npos ? kCorpus.size() : end + 1;
  }
  const std::string& value() const override {
    size_t end = kCorpus.find('\n', pos_);
    line_ = std::string(kCorpus.substr(pos_, end == std::string_view::npos ? end : end - pos_));
    return line_;
  }
  sentencepiece::util::Status status() const override { return {}; }

 private:
  size_t pos_ = 0;
  mutable std::string line_;
};

}  // namespace

std::string train_tiny_tokenizer() {
  const std::unordered_map<std::string, std::string> args = {
      {"model_type", "bpe"},
      {"vocab_size", std::to_string(kTinyTokenizerVocab)},
      {"character_coverage", "1.0"},
      {"byte_fallback", "true"},
      {"split_digits", "true"},
      {"add_dummy_prefix", "false"},
      {"remove_extra_whitespaces", "false"},
      {"allow_whitespace_only_pieces", "true"},
      {"normalization_rule_name", "identity"},
      {"pad_id", "0"},
      {"eos_id", "1"},
      {"bos_id", "2"},
      {"unk_id", "3"},
      {"pad_piece", "<pad>"},
      {"eos_piece", "<eos>"},
      {"bos_piece", "<bos>"},
      {"unk_piece", "<unk>"},
      {"user_defined_symbols",
       "<start_of_turn>,<end_of_turn>,<start_of_image>,<end_of_image>,<image_soft_token>"},
      {"num_threads", "1"},
      {"hard_vocab_limit", "false"},
  };
  sentencepiece::logging::SetMinLogLevel(2);
  CorpusLines corpus;
  std::string model;
  auto status = sentencepiece::SentencePieceTrainer::Train(args, &corpus, &model);
  LTX2_CHECK(status.ok(), "tiny tokenizer: SentencePiece training failed: {}", status.ToString());
  return model;
}

}  // namespace ltx2::model_sets
