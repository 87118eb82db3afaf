#include <iostream>
#include <string>

#include "shell.hpp"

int main()
{
    demo::Shell shell;
    std::string line;
    while (std::getline(std::cin, line))
        shell.execute(line);
    return 0;
}
