#include "io/fields.h"

#include <cmath>

#include "core/error.h"
#include "io/json_value.h"

namespace ltx2::fields {

using json = nlohmann::json;

double number_from_text(const std::string& text, const std::string& what) {
  try {
    size_t used = 0;
    const double v = std::stod(text, &used);
    if (used == text.size() && std::isfinite(v)) return v;
  } catch (const std::exception&) {
  }
  LTX2_FAIL("{}: '{}' is not a number", what, text);
}

int64_t integer_from_text(const std::string& text, const std::string& what, int64_t min, int64_t max) {
  int64_t v = 0;
  try {
    size_t used = 0;
    v = std::stoll(text, &used);
    if (used != text.size()) {
      // "128.0" and "1e3" are whole numbers too; a double compares exactly below 2^63.
      const double d = number_from_text(text, what);
      LTX2_CHECK(d == std::floor(d), "{}: '{}' is not a whole number", what, text);
      LTX2_CHECK(d >= -0x1p63 && d < 0x1p63, "{}: '{}' is out of range [{}, {}]", what, text, min, max);
      v = static_cast<int64_t>(d);
    }
  } catch (const std::out_of_range&) {
    LTX2_FAIL("{}: '{}' is out of range [{}, {}]", what, text, min, max);
  } catch (const std::invalid_argument&) {
    LTX2_FAIL("{}: '{}' is not a whole number", what, text);
  }
  LTX2_CHECK(v >= min && v <= max, "{}: '{}' is out of range [{}, {}]", what, text, min, max);
  return v;
}

std::string json_text(const json& j, const std::string& name) {
  LTX2_CHECK(j.is_string(), "field '{}': must be a string, got {}", name, j.type_name());
  return j.get<std::string>();
}

void throw_not_an_array(const std::string& name, const json& j) {
  LTX2_FAIL("field '{}': must be an array, got {}", name, j.type_name());
}

namespace {

Field base(std::string key, std::string flag, std::string help) {
  Field f;
  f.key = std::move(key);
  f.flags = {std::move(flag)};
  f.help = std::move(help);
  return f;
}

template <typename T>
Field integer_of(std::string key, std::string flag, std::string help, T& value) {
  Field f = base(std::move(key), std::move(flag), std::move(help));
  f.type_name = "INT";
  f.default_text = std::to_string(value);
  f.set_words = [&value, name = f.flag()](const std::vector<std::string>& w) {
    value = static_cast<T>(
        integer_from_text(w.at(0), name, std::numeric_limits<T>::min(), std::numeric_limits<T>::max()));
  };
  f.set_json = [&value](const json& j, const std::string& name) { value = json_integer<T>(j, name); };
  f.get_json = [&value] { return json(value); };
  return f;
}

}  // namespace

Field text(std::string key, std::string flag, std::string help, std::string& value) {
  Field f = base(std::move(key), std::move(flag), std::move(help));
  f.type_name = "TEXT";
  f.set_words = [&value](const std::vector<std::string>& w) { value = w.at(0); };
  f.set_json = [&value](const json& j, const std::string& name) { value = json_text(j, name); };
  f.get_json = [&value] { return json(value); };
  return f;
}

Field number(std::string key, std::string flag, std::string help, double& value) {
  Field f = base(std::move(key), std::move(flag), std::move(help));
  f.type_name = "FLOAT";
  f.default_text = fmt::format("{}", value);
  f.set_words = [&value, name = f.flag()](const std::vector<std::string>& w) {
    value = number_from_text(w.at(0), name);
  };
  f.set_json = [&value](const json& j, const std::string& name) { value = json_number(j, name); };
  f.get_json = [&value] { return json(value); };
  return f;
}

Field boolean_switch(std::string key, std::string flag, std::string help, bool& value) {
  Field f = base(std::move(key), std::move(flag), std::move(help));
  f.words = Words::Switch;
  f.set_words = [&value](const std::vector<std::string>&) { value = true; };
  f.set_json = [&value](const json& j, const std::string& name) {
    LTX2_CHECK(j.is_boolean(), "field '{}': must be true or false, got {}", name, j.type_name());
    value = j.get<bool>();
  };
  f.get_json = [&value] { return json(value); };
  return f;
}

Field integer(std::string key, std::string flag, std::string help, int& value) {
  return integer_of(std::move(key), std::move(flag), std::move(help), value);
}

Field integer(std::string key, std::string flag, std::string help, int64_t& value) {
  return integer_of(std::move(key), std::move(flag), std::move(help), value);
}

Field integers(std::string key, std::string flag, std::string help, std::vector<int>& value) {
  Field f = base(std::move(key), std::move(flag), std::move(help));
  f.type_name = "INT";
  f.words = Words::List;
  f.set_words = [&value, name = f.flag()](const std::vector<std::string>& w) {
    value.clear();
    for (const std::string& s : w)
      value.push_back(static_cast<int>(
          integer_from_text(s, name, std::numeric_limits<int>::min(), std::numeric_limits<int>::max())));
  };
  f.set_json = [&value](const json& j, const std::string& name) { value = json_integers<int>(j, name); };
  f.get_json = [&value] { return json(value); };
  return f;
}

Field without_flag(Field f) {
  f.flags.clear();
  return f;
}

Field checked(Field f, std::function<void()> check) {
  f.set_words = [inner = f.set_words, check](const std::vector<std::string>& w) {
    inner(w);
    check();
  };
  f.set_json = [inner = f.set_json, check](const json& j, const std::string& name) {
    inner(j, name);
    check();
  };
  return f;
}

Field in_group(std::string group, Field f) {
  f.group = std::move(group);
  return f;
}

json to_json(const FieldList& fields) {
  json j = json::object();
  for (const Field& f : fields) {
    if (f.group.empty())
      j[f.key] = f.get_json();
    else
      j[f.group][f.key] = f.get_json();
  }
  return j;
}

void from_json(const FieldList& fields, const json& j, JsonRead mode) {
  LTX2_CHECK(j.is_object(), "must be a JSON object, got {}", j.type_name());
  const auto find = [&](const std::string& group, const std::string& key) -> const Field* {
    for (const Field& f : fields)
      if (f.group == group && f.key == key) return &f;
    return nullptr;
  };
  const auto is_group = [&](const std::string& key) {
    for (const Field& f : fields)
      if (f.group == key) return true;
    return false;
  };
  for (const auto& [key, value] : j.items()) {
    if (is_group(key)) {
      LTX2_CHECK(value.is_object(), "field '{}': must be an object, got {}", key, value.type_name());
      for (const auto& [inner, v] : value.items()) {
        const Field* f = find(key, inner);
        LTX2_CHECK(f != nullptr, "unknown field '{}.{}'", key, inner);
        f->set_json(v, f->json_name());
      }
    } else {
      const Field* f = find("", key);
      LTX2_CHECK(f != nullptr, "unknown field '{}'", key);
      f->set_json(value, key);
    }
  }
  if (mode == JsonRead::Overlay) return;
  for (const Field& f : fields) {
    const bool present =
        f.group.empty() ? j.contains(f.key) : j.contains(f.group) && j.at(f.group).contains(f.key);
    LTX2_CHECK(present, "field '{}' is missing", f.json_name());
  }
}

}  // namespace ltx2::fields
