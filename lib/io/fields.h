// A settings struct's fields, each declared once: its JSON key, its command-line flag and help, and
// how its value is read from the flag's words and from JSON and written to JSON, with the checks a
// single value needs (type, range, form). The request and the model paths
// (pipeline/request_fields.h) and the ranks' settings (runtime/rank_settings.h) are declared this
// way, and every reader walks those lists: the command line (apps/common/generation_cli.cpp), the
// --jobs file, the wire format of a job and the fleet's setup. Checks across fields belong to the
// struct's validation (validate_request, ...), not here.
//
// A Field is bound to one object (its functions hold a reference to the member): build the list
// for the object being read or written, and do not keep it past the object.
#pragma once

#include <cstdint>
#include <functional>
#include <limits>
#include <nlohmann/json.hpp>
#include <string>
#include <vector>

namespace ltx2::fields {

// How a flag takes its words on the command line.
enum class Words {
  Switch,  // none: given means true
  One,     // exactly one (given twice: a usage error)
  List,    // any number, all of them the value (none: the empty list)
  Group,   // min_words..max_words a use, e.g. PATH FRAME STRENGTH [CRF]
};

struct Field {
  std::string key;                 // JSON key, inside `group`'s object when that is not empty
  std::string group;               // e.g. "video_guidance": several flags that are one JSON object
  std::vector<std::string> flags;  // the first names the value in errors; none: not on the command line
  std::string help;
  std::string default_text;  // --help's default; empty: none shown (or the help says it)
  std::string type_name;     // the words in --help: INT, PATH [STRENGTH]
  Words words = Words::One;
  int min_words = 1, max_words = 1;  // Words::Group
  bool repeatable = false;           // Words::Group: each use adds one entry to the value
  // One use's words (a Switch gets none); throws ltx2::Error naming the flag.
  std::function<void(const std::vector<std::string>& words)> set_words;
  // The whole value from JSON; `name` is the field's name in errors ("video_guidance.cfg_scale").
  std::function<void(const nlohmann::json& value, const std::string& name)> set_json;
  std::function<nlohmann::json()> get_json;

  const std::string& flag() const { return flags.front(); }
  std::string json_name() const { return group.empty() ? key : group + "." + key; }
};
using FieldList = std::vector<Field>;

// ---- builders for the common kinds of value ------------------------------------------------

Field text(std::string key, std::string flag, std::string help, std::string& value);
Field number(std::string key, std::string flag, std::string help, double& value);
Field boolean_switch(std::string key, std::string flag, std::string help, bool& value);
// Whole numbers within the type's range.
Field integer(std::string key, std::string flag, std::string help, int& value);
Field integer(std::string key, std::string flag, std::string help, int64_t& value);
// A list of whole numbers (the flag: its words; JSON: an array).
Field integers(std::string key, std::string flag, std::string help, std::vector<int>& value);
// A list given one entry per use of its flag, each use a group of min_words..max_words words
// (PATH [STRENGTH], ...); in JSON an array of entries, replacing the list.
template <typename T>
Field repeated_group(std::string key, std::string flag, std::string help, std::string type_name, int min_words,
                     int max_words, std::vector<T>& list,
                     std::function<T(const std::vector<std::string>&)> from_words,
                     std::function<T(const nlohmann::json&, const std::string&)> from_json,
                     std::function<nlohmann::json(const T&)> entry_json);
// A field with no flag (only the wire carries it).
Field without_flag(Field f);
// `f` with `check` run after each set, from words or JSON alike (a bound on the one value; throws
// naming the flag).
Field checked(Field f, std::function<void()> check);
Field in_group(std::string group, Field f);

// Throws the ltx2::Error for a field that must be an array and is not.
[[noreturn]] void throw_not_an_array(const std::string& name, const nlohmann::json& j);

template <typename T>
Field repeated_group(std::string key, std::string flag, std::string help, std::string type_name, int min_words,
                     int max_words, std::vector<T>& list,
                     std::function<T(const std::vector<std::string>&)> from_words,
                     std::function<T(const nlohmann::json&, const std::string&)> from_json,
                     std::function<nlohmann::json(const T&)> entry_json) {
  Field f;
  f.key = std::move(key);
  f.flags = {std::move(flag)};
  f.help = std::move(help);
  f.type_name = std::move(type_name);
  f.words = Words::Group;
  f.min_words = min_words;
  f.max_words = max_words;
  f.repeatable = true;
  f.set_words = [&list, from_words](const std::vector<std::string>& w) { list.push_back(from_words(w)); };
  f.set_json = [&list, from_json](const nlohmann::json& j, const std::string& name) {
    if (!j.is_array()) throw_not_an_array(name, j);
    list.clear();
    for (const nlohmann::json& e : j) list.push_back(from_json(e, name));
  };
  f.get_json = [&list, entry_json] {
    nlohmann::json out = nlohmann::json::array();
    for (const T& e : list) out.push_back(entry_json(e));
    return out;
  };
  return f;
}

// ---- readers and writers over a list -------------------------------------------------------

// Every field, nested by group.
nlohmann::json to_json(const FieldList& fields);

enum class JsonRead {
  Complete,  // every field must be there (the wire format: what one side wrote, the other reads)
  Overlay,   // only the fields present change (a --jobs line over the command line's request)
};
// Sets the fields from a JSON object; an unknown key, a key that is not an object where a group's
// is, and (Complete) a missing one are ltx2::Errors naming the field.
void from_json(const FieldList& fields, const nlohmann::json& j, JsonRead mode);

// ---- a flag's words ------------------------------------------------------------------------

// A finite number / a whole number within [min, max]; `what` names the flag (and part) in errors:
// "--image a.png STRENGTH: 'abc' is not a number".
double number_from_text(const std::string& text, const std::string& what);
int64_t integer_from_text(const std::string& text, const std::string& what,
                          int64_t min = std::numeric_limits<int64_t>::min(),
                          int64_t max = std::numeric_limits<int64_t>::max());

// A JSON string; names the field otherwise.
std::string json_text(const nlohmann::json& j, const std::string& name);

}  // namespace ltx2::fields
