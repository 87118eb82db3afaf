#include "shell.hpp"

#include <cstdio>
#include <sstream>

#include "demo/hash.h"

namespace demo {

std::vector<std::string> split_words(const std::string &line)
{
    std::istringstream in(line);
    std::vector<std::string> words;
    std::string w;
    while (in >> w)
        words.push_back(w);
    return words;
}

int PutCommand::run(table *t, const std::vector<std::string> &args)
{
    if (args.size() != 3)
        return -1;
    return table_put(t, args[1].c_str(), args[2].c_str());
}

int GetCommand::run(table *t, const std::vector<std::string> &args)
{
    if (args.size() != 2)
        return -1;
    const char *v = table_get(t, args[1].c_str());
    std::printf("%s\n", v ? v : "(nil)");
    return v ? 0 : 1;
}

Shell::Shell() : table_(table_new(hash_djb2))
{
    commands_.push_back(new PutCommand());
    commands_.push_back(new GetCommand());
}

Shell::~Shell()
{
    for (Command *c : commands_)
        delete c;
    table_free(table_);
}

Command *Shell::find(const std::string &name)
{
    for (Command *c : commands_)
        if (name == c->name())
            return c;
    return nullptr;
}

int Shell::execute(const std::string &line)
{
    std::vector<std::string> words = split_words(line);
    if (words.empty())
        return 0;
    Command *c = find(words[0]);
    if (!c) {
        std::fprintf(stderr, "unknown command: %s\n", words[0].c_str());
        return -1;
    }
    return c->run(table_, words);
}

} // namespace demo
