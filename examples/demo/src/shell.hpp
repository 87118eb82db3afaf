#pragma once

#include <string>
#include <vector>

extern "C" {
#include "demo/table.h"
}

namespace demo {

class Command {
public:
    virtual ~Command() = default;
    virtual int run(table *t, const std::vector<std::string> &args) = 0;
    virtual const char *name() const = 0;
};

class PutCommand : public Command {
public:
    int run(table *t, const std::vector<std::string> &args) override;
    const char *name() const override { return "put"; }
};

class GetCommand : public Command {
public:
    int run(table *t, const std::vector<std::string> &args) override;
    const char *name() const override { return "get"; }
};

class Shell {
public:
    Shell();
    ~Shell();
    int execute(const std::string &line);

private:
    Command *find(const std::string &name);
    table *table_;
    std::vector<Command *> commands_;
};

std::vector<std::string> split_words(const std::string &line);

} // namespace demo
